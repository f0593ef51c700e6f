/**
 * Notifications to a real local HTTP receiver: one message per run for a fleet ready, a failed up, capacity found,
 * VMs deleted by --over-cost, a down that leaves VMs billing; nothing secret in any of them; an unreachable or
 * failing receiver leaves the exit code as it was.
 */
import {createServer} from 'node:net'
import type {AddressInfo} from 'node:net'
import {describe, expect, it} from 'vitest'

import {type CliResult, parseJson, waitFor} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {HOOK_PATH, useWebhook} from '../helpers/webhook.js'
import {REAL_CLOCK} from '../../src/lib/core/clock.js'
import {DEFAULT_TOKEN, type SimulatorOptions, type TargonSimulator} from '../simulator/simulator.js'

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']

const hook = useWebhook()

const fresh = useFreshFixture({env: () => ({TARGON_NOTIFY_URL: hook.url}), inProcess: true})
const {targon} = fresh

/**
 * A fresh simulator and config directory on the real clock (a delivery's 5 s budget is real time), and a webhook that
 * answers 200 and has received nothing yet.
 */
async function start(options: SimulatorOptions = {}): Promise<TargonSimulator> {
  await fresh.setup({...options, clock: REAL_CLOCK})
  hook.received.length = 0
  hook.answerStatus = 200
  return fresh.sim
}

/** Nothing secret in what was sent or printed: not the API key, not the hook's token. */
function expectNoSecrets(result: CliResult): void {
  for (const text of [JSON.stringify(hook.received.map((message) => message.body)), result.stdout, result.stderr]) {
    expect(text).not.toContain(DEFAULT_TOKEN)
    expect(text).not.toContain('secret-hook-token')
  }
}

describe('notifications', () => {
  it('up ready, VMs deleted by --over-cost: one message each, to the webhook, with the facts and no secret', async () => {
    const sim = await start()
    const up = await targon([...UP, '--count', '2'], {env: {TARGON_OWNER: 'alice'}})
    expect(up.code, up.stderr).toBe(0)
    const vms = parseJson(up).data.vms as {name: string; price_per_hour: number; uid: string}[]
    expect(parseJson(up).data.owner).toBe('alice')
    expect(hook.received).toHaveLength(1)
    expect(hook.received[0]!.path).toBe(HOOK_PATH)
    expect(hook.received[0]!.body).toMatchObject({
      targon: {command: 'up', event: 'up-ready', exit_code: 0, org: 'acme', owner: 'alice', profile: 'default'},
      text: expect.stringContaining('targon up: 2 VMs ready in acme'),
    })
    // What bills after the run, as the listing has it: both VMs, at their price.
    const listed = sim.billing().map((vm) => vm.uid)
    expect(listed.sort()).toEqual(vms.map((vm) => vm.uid).sort())
    expect(hook.received[0]!.body.targon.still_billing.sort()).toEqual(listed)
    const hourly = vms.reduce((sum, vm) => sum + vm.price_per_hour, 0).toFixed(2)
    expect(hook.received[0]!.body.text).toContain(`(${hourly} USD/h; owner alice)`)
    expect(hook.received[0]!.body.targon.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual(vms.map((vm) => vm.uid).sort())
    expectNoSecrets(up)

    const down = await targon(['down', '--over-cost', '0.0001', '--json'], {env: {TARGON_OWNER: 'alice'}})
    expect(down.code, down.stdout).toBe(0)
    expect(hook.received).toHaveLength(2)
    expect(hook.received[1]!.body.targon).toMatchObject({command: 'down', event: 'down-deleted', exit_code: 0, still_billing: []})
    expect(hook.received[1]!.body.text).toMatch(/^targon down --over-cost 0.0001 deleted 2 VMs in acme: /)
    expect(hook.received[1]!.body.text).toContain(`(${hourly} USD/h; owner alice no longer billing)`)
    expectNoSecrets(down)
    // A plain --all says nothing: nothing was scheduled, nothing bills.
    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
    expect(hook.received).toHaveLength(2)
  })

  it('still_billing is true to the listing: up of a second VM lists both, a down of one lists the other', async () => {
    const sim = await start()
    const first = await targon([...UP, '--fleet', 'sb', '--name', 'a', '--max-cost', '0.0001'])
    expect(first.code, first.stderr).toBe(0)
    const a = parseJson(first).data.vms[0].uid as string
    const second = await targon([...UP, '--fleet', 'sb', '--name', 'b'])
    expect(second.code, second.stderr).toBe(0)
    const b = parseJson(second).data.vms[0].uid as string
    expect(hook.received).toHaveLength(2)
    expect(hook.received[1]!.body.targon).toMatchObject({event: 'up-ready', vms: [{uid: b}]})
    expect(hook.received[1]!.body.targon.still_billing.sort()).toEqual([a, b].sort())

    const down = await targon(['down', '--expired', '--fleet', 'sb', '--json'])
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{billing: false, uid: a}])
    expect(sim.billing().map((vm) => vm.uid)).toEqual([b])
    expect(hook.received).toHaveLength(3)
    expect(hook.received[2]!.body.targon).toMatchObject({event: 'down-deleted', still_billing: [b], vms: [{uid: a}]})
    expect(hook.received[2]!.body.text).toContain(`still billing in the fleet: ${b}`)
  })

  it('a failed up says what was rolled back; a down that leaves VMs billing raises the alarm', async () => {
    // Every workload gets a uid that fails the checks: up fails, and what it made is an invalid item that may bill.
    const sim = await start({createdUid: (name) => `../${name}`})
    const up = await targon(UP, {env: {TARGON_RECONCILE_WINDOW: '1'}})
    expect(up.code).toBe(5)
    expect(hook.received).toHaveLength(1)
    expect(hook.received[0]!.body.targon).toMatchObject({event: 'up-failed', exit_code: 5})
    expect(hook.received[0]!.body.text).toMatch(/^targon up failed \(BAD_RESPONSE\)/)

    const down = await targon(['down', '--all', '--json'])
    expect(down.code).toBe(11)
    expect(hook.received).toHaveLength(2)
    expect(hook.received[1]!.body.targon).toMatchObject({event: 'down-still-billing', exit_code: 11})
    expect(hook.received[1]!.body.targon.still_billing).toHaveLength(1)
    expect(hook.received[1]!.body.text).toContain('STILL BILLING in acme')
    expectNoSecrets(down)
    // Named by its exact uid, it goes.
    const uid = hook.received[1]!.body.targon.still_billing[0] as string
    expect((await targon(['down', uid, '--json'])).code).toBe(0)
    expect(sim.billing()).toEqual([])
  })

  it('says when capacity is found during --wait, then that the VM is ready', async () => {
    const sim = await start({capacitySchedule: [{atMs: 0, available: 0, offer: 'rtx6000b-small'}]})
    const running = targon([...UP, '--wait', '1m'], {env: {TARGON_CAPACITY_POLL_INTERVAL: '0.2'}})
    // Capacity comes after up's first read of the offers, whenever its start-up lets it make that read.
    await waitFor(() => sim.requests('GET', '/tha/v3/inventory').length > 0, 30_000)
    sim.scheduleCapacity([{atMs: 1500, available: 1, offer: 'rtx6000b-small'}])
    const up = await running
    expect(up.code, up.stderr).toBe(0)
    expect(hook.received.map((message) => message.body.targon.event)).toEqual(['capacity-found', 'up-ready'])
    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
  })

  it('an unreachable or refusing webhook leaves the exit code as it was, with a warning, within 5 s', async () => {
    await start()
    hook.answerStatus = 404
    const missing = await targon(UP)
    expect(missing.code).toBe(0)
    expect(parseJson(missing).warnings.join('\n')).toContain('the notification was not delivered (HTTP 404)')
    hook.answerStatus = 500
    const started = Date.now()
    const refused = await targon(UP)
    expect(refused.code).toBe(0)
    expect(parseJson(refused).warnings.join('\n')).toContain('the notification was not delivered (HTTP 500)')
    expect(Date.now() - started).toBeLessThan(20_000)
    const down = await targon(['down', '--all', '--json'], {env: {TARGON_NOTIFY_URL: 'http://127.0.0.1:1/hook'}})
    expect(down.code).toBe(0)
    const gone = await targon(UP, {env: {TARGON_NOTIFY_URL: 'http://127.0.0.1:1/hook'}})
    expect(gone.code).toBe(0)
    expect(parseJson(gone).warnings.join('\n')).toContain('the notification was not delivered (connection refused)')
    // A receiver that takes the connection and never answers: the delivery gives up after its 5 s, and says so.
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`
      const down = await targon(['down', '--over-cost', '0.0001', '--json'], {env: {TARGON_NOTIFY_URL: url}})
      expect(down.code).toBe(0)
      expect(parseJson(down).warnings.join('\n')).toContain('the notification was not delivered (no answer within 5 s)')
    } finally {
      silent.close()
    }
    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
  })

  it('refuses a plain-http webhook to another host without quoting it, masks it in config list, and warns of --notify', async () => {
    await start()
    const up = await targon([...UP, '--notify', 'http://hooks.example.com/secret-hook-token'])
    expect(up.code).toBe(2)
    expect(up.stdout + up.stderr).not.toContain('secret-hook-token')
    const set = await targon(['config', 'set', 'notify-url'], {input: `${hook.url}\n`})
    expect(set.code, set.stderr).toBe(0)
    const list = await targon(['config', 'list', '--json'])
    expect(parseJson(list).data.values.notify_url).toBe(`${new URL(hook.url).origin}/…`)
    expect(list.stdout).not.toContain('secret-hook-token')
    const flagged = await targon([...UP, '--notify', hook.url])
    expect(flagged.code).toBe(0)
    expect(parseJson(flagged).warnings[0]).toContain('--notify puts the webhook URL where ps and crontabs show it')
    expect(flagged.stdout + flagged.stderr).not.toContain('secret-hook-token')
    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
  })

  it('a broken notify URL never stops a down: malformed, without a scheme, plain http elsewhere or unreachable, each deletes and exits 0 with a warning', async () => {
    const sim = await start()
    // up refuses none of these from the environment either: its clean-up must not depend on them.
    const up = await targon([...UP, '--count', '4', '--fleet', 'evt'], {
      env: {TARGON_NOTIFY_URL: 'http://hooks.example.com/x/S'},
    })
    expect(up.code, up.stderr).toBe(0)
    expect(parseJson(up).warnings.join('\n')).toContain(
      'TARGON_NOTIFY_URL must use https (plain http only to this machine): this run sends no notification',
    )
    const names = (parseJson(up).data.vms as {name: string}[]).map((vm) => vm.name)
    const broken: [Record<string, string>, string[], RegExp][] = [
      [
        {TARGON_NOTIFY_URL: 'http://hooks.example.com/x/S'},
        [names[0]!],
        /TARGON_NOTIFY_URL must use https .*: this run sends no notification/,
      ],
      [{TARGON_NOTIFY_URL: 'hooks.example.com/x/S'}, [names[1]!], /TARGON_NOTIFY_URL is not a URL: this run sends no notification/],
      [{}, [names[2]!, '--notify', 'ht!tp:/x/S'], /--notify is not a URL: this run sends no notification/],
      // Reachable by name, refusing connections: the deletion it reports is done all the same.
      [{TARGON_NOTIFY_URL: 'http://127.0.0.1:1/x/S'}, ['--fleet', 'evt', '--over-cost', '0.0001'], /not delivered \(connection refused\)/],
    ]
    for (const [extra, args, warning] of broken) {
      const down = await targon(['down', ...args, '--json'], {env: {...extra}})
      expect(down.code, down.stdout).toBe(0)
      const doc = parseJson(down)
      expect(doc.warnings.join('\n')).toMatch(warning)
      expect(doc.data.results.every((result: {action: string}) => result.action === 'deleted')).toBe(true)
      expect(down.stdout + down.stderr).not.toContain('x/S')
    }
    expect(sim.billing()).toEqual([])
    expect(hook.received).toEqual([])
  })

  it('an up that created nothing (no offer under the cap, exit 9) posts nothing', async () => {
    const sim = await start()
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '0.01', '--no-bootstrap', '--json'])
    expect(up.code).toBe(9)
    expect(sim.requests('POST', '/workloads')).toEqual([])
    expect(hook.received).toEqual([])
  })
})
