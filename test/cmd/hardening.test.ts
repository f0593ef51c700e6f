/**
 * Hardening against what a new user runs into, in process: rate limits on mutations, unanswered requests, messages,
 * short names, a new TTL on a VM taken over, and small truths of status, down and the key files. Each test checks
 * the exit code, the JSON envelope and the simulator's ledger. What only a process shows (closed pipes and full
 * disks, signals, a terminal, concurrent runs, the command_not_found hook) is in test/e2e/hardening.test.ts.
 */
import {readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {writePin} from '../../src/lib/adapters/ssh/pins.js'
import {ROOT, parseJson, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {setup, targon} = ctx

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

describe('rate limits and deadlines', () => {
  it('retries a 429 on key registration, create and deploy after Retry-After, without taking it for a refusal', async () => {
    await setup()
    const tooMany = {
      body: JSON.stringify({error: 'too many requests: capacity of the rate limiter exceeded', reason: 'RATE_LIMITED'}),
      retryAfter: '0.2',
      status: 429,
      times: 2,
    }
    ctx.sim.inject({...tooMany, method: 'POST', path: /\/ssh-keys$/})
    ctx.sim.inject({...tooMany, method: 'POST', path: /\/workloads$/})
    ctx.sim.inject({...tooMany, method: 'POST', path: '/deploy'})
    const up = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(up.code, up.stdout).toBe(0)
    const doc = parseJson(up)
    expect(doc.data.vms[0].resource).toBe('rtx6000b-small')
    // Only that no guard covers the VM: no retry is taken for a refusal.
    expect(doc.warnings).toEqual([
      'no guard covers the VMs this run made: run targon guard install --team on an always-on machine (or targon guard install --cron here)',
    ])
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.requests('POST', '/deploy').map((request) => request.status)).toEqual([429, 429, 200])
    expect(ctx.sim.live().map((workload) => workload.status)).toEqual(['running'])
  })

  it('a 429 that outlasts its retries is an API error, never a capacity refusal: no other offer is rented', async () => {
    await setup()
    ctx.sim.inject({
      body: JSON.stringify({error: 'no capacity left in the rate limiter', reason: 'RATE_LIMITED'}),
      method: 'POST',
      path: '/deploy',
      retryAfter: '0',
      status: 429,
    })
    const up = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(up.code).toBe(5)
    expect(parseJson(up).error).toMatchObject({code: 'API_ERROR', http_status: 429})
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.billing()).toEqual([])
    // Never deployed, so Targon refuses to delete it (500): named as a leftover, and it does not run.
    expect(parseJson(up).data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual(
      ctx.sim.live().map((workload) => workload.uid),
    )
  })

  it('--timeout bounds requests that are never answered, and what was created is deleted (exit 6)', async () => {
    await setup()
    ctx.sim.inject({delayMs: 60_000, path: '/tha/v3/inventory'})
    let started = Date.now()
    const silent = await targon([...UP, '--timeout', '2s', '--json'])
    expect(silent.code).toBe(6)
    expect(parseJson(silent).error.code).toBe('TIMEOUT')
    expect(Date.now() - started).toBeLessThan(8000)

    ctx.sim.clearFaults()
    ctx.sim.inject({delayMs: 60_000, method: 'POST', path: '/deploy'})
    started = Date.now()
    // The clean-up watches the unanswered deploy a third of the reconcile window (here 0.5 s) before leaving it.
    const deploy = await targon([...UP, '--timeout', '3s', '--json'], {env: {TARGON_RECONCILE_WINDOW: '1.5'}})
    expect(deploy.code).toBe(6)
    expect(parseJson(deploy).error.code).toBe('TIMEOUT')
    expect(parseJson(deploy).data.cleanup).toMatchObject({attempted: true, survivors: []})
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.billing()).toEqual([])
    expect(parseJson(deploy).data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual(
      ctx.sim.live().map((workload) => workload.uid),
    )
  })
})

describe('messages', () => {
  it('--on-failure keep says the VM was kept, that it is still billing, and how to delete it', async () => {
    await setup({provisioning: 'error'})
    const result = await targon([...UP, '--on-failure', 'keep', '--json'])
    expect(result.code).toBe(5)
    const [vm] = ctx.sim.live()
    expect(vm).toBeDefined()
    const {message} = parseJson(result).error
    expect(message).toContain(`kept ${vm?.name} (${vm?.uid}) (--on-failure keep), still billing: delete with targon down ${vm?.uid}`)
    expect((await targon(['down', vm?.uid as string])).code).toBe(0)
    expect(ctx.sim.live()).toEqual([])
  })

  it('speaks of one VM in the singular', async () => {
    await setup({provisioning: (workload) => (workload.deployIndex === 0 ? 'error' : 'normal')})
    const fleet = await targon([...UP, '--count', '2', '--json'])
    expect(fleet.code).toBe(11)
    expect(parseJson(fleet).error.message).toBe('1 of 2 VMs failed; the one that succeeded was rolled back')
    expect(ctx.sim.live()).toEqual([])

    expect((await targon(UP)).code).toBe(0)
    const status = await targon(['status'])
    expect(status.stderr).toMatch(/^1 VM, /m)
    expect((await targon(['down', '--all'])).code).toBe(0)
  })
})

describe('short names', () => {
  it('after up --name worker1, status, ssh and down find worker1 within the fleet', async () => {
    await setup()
    const up = await targon([...UP, '--name', 'worker1', '--json'])
    expect(up.code, up.stdout).toBe(0)
    const {uid} = parseJson(up).data.vms[0]
    const trained = await targon([...UP, '--name', 'worker1', '--fleet', 'train', '--json'])
    const trainUid = parseJson(trained).data.vms[0].uid

    const status = await targon(['status', 'worker1', '--json'])
    expect(status.code, status.stdout).toBe(0)
    expect(parseJson(status).data.vms.map((vm: {uid: string}) => vm.uid)).toEqual([uid])
    expect(
      parseJson(await targon(['status', 'worker1', '--fleet', 'train', '--json'])).data.vms.map((vm: {uid: string}) => vm.uid),
    ).toEqual([trainUid])
    // A pinned host key, so that ssh --json does not need a live sshd to print the connection.
    writePin(ctx.configDir, trainUid, '127.0.0.1', 22, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk8hW1WvWq0cJ8q6yG7Yb8kQ2m4Zx3n5p7r9t1v3x5z')
    const ssh = await targon(['ssh', 'worker1', '--fleet', 'train', '--json'])
    expect(ssh.code, ssh.stdout).toBe(0)
    expect(parseJson(ssh).data.uid).toBe(trainUid)
    expect((await targon(['status', 'worker2', '--json'])).code).toBe(4)

    const down = await targon(['down', 'worker1', '--json'])
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'deleted', uid}])
    expect(ctx.sim.live().map((workload) => workload.uid)).toEqual([trainUid])

    // down reads a label in the configured fleet, as status and ssh do.
    expect((await targon(['config', 'set', 'fleet', 'train'])).code).toBe(0)
    const trainDown = await targon(['down', 'worker1', '--json'])
    expect(parseJson(trainDown).data.results).toMatchObject([{action: 'deleted', uid: trainUid}])
    expect(ctx.sim.billing()).toEqual([])
  })

  it('up --name alone only takes over: a name that matches nothing exits 4 and rents nothing', async () => {
    await setup()
    const typo = await targon(['up', '--name', 'wroker1', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(typo.code).toBe(4)
    expect(parseJson(typo).error.message).toContain('no VM named tcli-default-wroker1 to take over')
    expect(ctx.sim.workloads.size).toBe(0)
  })
})

describe('adopting with a new TTL', () => {
  it('up --name tt --ttl 5m on an existing tt applies the new TTL and says so', async () => {
    await setup()
    const first = parseJson(await targon([...UP, '--name', 'tt', '--ttl', '6h', '--json']))
    const firstExpiry = Date.parse(first.data.vms[0].ttl_expires_at)
    expect(firstExpiry).toBeGreaterThan(Date.now() + 5 * 3_600_000)

    const again = await targon([...UP, '--name', 'tt', '--ttl', '5m', '--json'])
    expect(again.code, again.stdout).toBe(0)
    const doc = parseJson(again)
    expect(doc.data.vms[0].adopted).toBe(true)
    const expiry = Date.parse(doc.data.vms[0].ttl_expires_at)
    expect(expiry).toBeLessThan(Date.now() + 5 * 60_000 + 1000)
    expect(doc.warnings.join(' ')).toContain(
      `its TTL now ends at ${doc.data.vms[0].ttl_expires_at} (was ${first.data.vms[0].ttl_expires_at})`,
    )
    const status = parseJson(await targon(['status', 'tt', '--json']))
    expect(status.data.vms[0].ttl_expires_at).toBe(doc.data.vms[0].ttl_expires_at)

    // From a fresh config directory (another machine), the TTL is kept in a new local record.
    const elsewhere = tempDir('targon-config-')
    const adopted = await targon([...UP, '--name', 'tt', '--ttl', '1h', '--json'], {env: {TARGON_CONFIG_DIR: elsewhere}})
    expect(adopted.code, adopted.stdout).toBe(0)
    expect(parseJson(adopted).data.vms[0].ttl_expires_at).not.toBeNull()
    expect(ctx.sim.live()).toHaveLength(1)
  })
})

describe('small truths', () => {
  it('status shows the GPUs like up does, from the inventory when the listing names only the resource', async () => {
    await setup({resourceDetail: false})
    expect((await targon(UP)).code).toBe(0)
    const status = parseJson(await targon(['status', '--json']))
    expect(status.data.vms[0]).toMatchObject({gpu_count: 1, gpu_model: 'RTX-PRO-6000B', resource: 'rtx6000b-small'})
    expect((await targon(['status'])).stdout).toContain('1x RTX-PRO-6000B')
  })

  it('status --dstack-fleet without an eligible VM warns and exits 4', async () => {
    await setup()
    expect((await targon(UP)).code).toBe(0)
    const result = await targon(['status', '--dstack-fleet', '--json'])
    expect(result.code).toBe(4)
    expect(parseJson(result).error.code).toBe('NOT_FOUND')
    const human = await targon(['status', '--dstack-fleet'])
    expect(human.code).toBe(4)
    expect(human.stdout).toBe('')
    expect(human.stderr).toContain('Warning: 1 VM of fleet default is not bootstrapped and running')
  })

  it('down names an unnamed uid once', async () => {
    // The tombstone leaves the listing at once, so the second run knows the uid only from its delete note.
    await setup({tombstoneLifetimeMs: 0})
    const {uid} = parseJson(await targon([...UP, '--json'])).data.vms[0]
    expect((await targon(['down', uid])).code).toBe(0)
    const again = await targon(['down', uid])
    expect(again.stderr).toContain(`already-gone: ${uid}\n`)
  })

  it('the key files have the modes the files table states', async () => {
    await setup()
    expect((await targon(UP)).code).toBe(0)
    const table = readFileSync(join(ROOT, 'docs/concepts/files-and-security.md'), 'utf8')
    for (const file of ['keys/id_ed25519', 'keys/id_ed25519.pub']) {
      const row = new RegExp(`^\\| \`${file.replaceAll('.', '\\.')}\` \\|.*\\| (0[0-7]{3}) \\|$`, 'm').exec(table)
      expect(row, file).not.toBeNull()
      expect((statSync(join(ctx.configDir, file)).mode & 0o777).toString(8).padStart(4, '0'), file).toBe(row?.[1])
    }
  })
})

describe('hints name flags of the command that prints them', () => {
  it("run says whose an up hint's flags are: run takes no --image", async () => {
    await setup()
    expect((await targon(['config', 'set', 'image', 'no-such-image'])).code).toBe(0)
    const run = await targon(['run', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-sync', '--json', '--', 'true'])
    expect(run.code, run.stdout + run.stderr).toBe(2)
    expect(parseJson(run).error).toMatchObject({
      hint: expect.stringMatching(
        /^use --image with one of: .+ \(flags of targon up: rent the VM with it, then targon run VM -- COMMAND\)$/,
      ),
      message: 'image "no-such-image" is not offered',
    })
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(0)
  })
})
