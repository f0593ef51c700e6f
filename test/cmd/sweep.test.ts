/**
 * targon sweep against the simulator (no SSH: the idle policy has its own file, sweep-idle.test.ts): each limit
 * deletes its VM and nothing else, what no limit covers is reported and kept, the runway is read after the deletions,
 * one notification per run, the heartbeat pinged on success and on failure, and one sweep at a time.
 */
import {mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {type Server, createServer} from 'node:http'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {type CliResult, parseJson, tempDir, waitFor, writeConfigFile} from '../helpers/cli.js'
import {setTtl} from '../helpers/records.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {HOOK_PATH, useWebhook} from '../helpers/webhook.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const hook = useWebhook()
const HEARTBEAT_TOKEN = 'b1e3c0de-heartbeat-secret'

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']
const HOUR = 3_600_000

async function upOne(...extra: string[]): Promise<{name: string; uid: string}> {
  const up = await targon([...UP, ...extra])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

/** Moves a VM's TTL into the past. */
function expireTtl(name: string): void {
  setTtl(ctx.configDir, name, Date.now() - 60_000)
}

/** Makes a workload look created `ms` ago, as the API reports it. */
function age(uid: string, ms: number): void {
  ctx.sim.workloads.get(uid)!.created_at = new Date(Date.now() - ms).toISOString()
}

/**
 * Runs a printed command as a user pastes it in a shell of another home (a config directory of its own, unused),
 * `targon` being the built CLI.
 */
const paste = (command: string) =>
  targon([], {config: join(tempDir('targon-paste-'), 'config'), shell: (cli) => `targon() { ${cli} "$@"; }\n${command}`})

/** The sweep locks of the config directory, one per profile while a sweep runs. */
const sweepLocks = () =>
  readdirSync(join(ctx.configDir, 'locks'))
    .filter((name) => name.startsWith('sweep-'))
    .map((name) => join(ctx.configDir, 'locks', name))

const billingUids = () =>
  ctx.sim
    .billing()
    .map((workload) => workload.uid)
    .sort()

const heartbeatEnv = () => ({
  TARGON_HEARTBEAT_URL: `${hook.url.replace(HOOK_PATH, '')}/ping/${HEARTBEAT_TOKEN}`,
  TARGON_NOTIFY_URL: hook.url,
})
const pings = () => hook.received.filter((each) => each.path.startsWith('/ping/')).map((each) => `${each.method} ${each.path}`)
const notifications = () => hook.received.filter((each) => each.path === HOOK_PATH).map((each) => each.body)

function expectNoSecrets(result: CliResult): void {
  for (const text of [JSON.stringify(notifications()), result.stdout, result.stderr]) {
    expect(text).not.toContain(DEFAULT_TOKEN)
    expect(text).not.toContain(HEARTBEAT_TOKEN)
    expect(text).not.toContain('secret-hook-token')
  }
}

describe('targon sweep', () => {
  it('deletes each VM past its TTL, budget or --over-cost, keeps the rest, reports what no limit covers, notifies once, pings', async () => {
    await ctx.setup()
    hook.received.length = 0
    const ttl = await upOne('--ttl', '2h')
    const spent = await upOne('--max-cost', '2')
    const costly = await upOne()
    const young = await upOne('--ttl', '2h', '--max-cost', '50')
    const free = await upOne()
    const foreign = ctx.sim.addWorkload({name: 'someone-else', status: 'running'})
    expireTtl(ttl.name)
    age(spent.uid, 2 * HOUR)
    age(costly.uid, 40 * HOUR)

    const dry = await targon(['sweep', '--over-cost', '20', '--dry-run', '--json'], {env: heartbeatEnv()})
    expect(dry.code, dry.stdout + dry.stderr).toBe(0)
    const plan = parseJson(dry).data
    expect(
      plan.results.map((each: {uid: string; action: string; reason: string}) => `${each.uid} ${each.action} ${each.reason}`).sort(),
    ).toEqual([`${ttl.uid} would-delete ttl`, `${spent.uid} would-delete max-cost`, `${costly.uid} would-delete over-cost`].sort())
    expect(billingUids()).toHaveLength(6)
    expect(notifications()).toEqual([])
    // A dry run is not the guard at work: no ping.
    expect(pings()).toEqual([])

    const sweep = await targon(['sweep', '--over-cost', '20', '--json'], {env: heartbeatEnv()})
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const doc = parseJson(sweep).data
    expect(doc.results.every((each: {action: string; billing: boolean}) => each.action === 'deleted' && each.billing === false)).toBe(true)
    expect(doc.survivors).toEqual([])
    expect(billingUids()).toEqual([young.uid, free.uid, foreign.uid].sort())
    // Reported, never deleted: the VM of this tool with no limit (--over-cost covers only what has a price: all here),
    // and the VM of another origin.
    expect(doc.unlimited.map((each: {uid: string; origin: string}) => `${each.uid} ${each.origin}`)).toEqual([`${foreign.uid} other`])
    expect(notifications()).toHaveLength(1)
    expect(notifications()[0]).toMatchObject({targon: {command: 'sweep', event: 'sweep-deleted', exit_code: 0, still_billing: []}})
    expect(notifications()[0].text).toMatch(/^targon sweep deleted 3 VMs in acme: /)
    expect(notifications()[0].text).toContain(`${ttl.name} (ttl)`)
    expect(pings()).toEqual([`GET /ping/${HEARTBEAT_TOKEN}`])
    expectNoSecrets(sweep)

    // Without --over-cost, the VM with no limit is reported, and still kept; nothing to delete, nothing notified.
    hook.received.length = 0
    const again = await targon(['sweep'], {env: heartbeatEnv()})
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain(`no limit: ${free.name} (${free.uid})`)
    expect(again.stdout).toContain(`no limit: someone-else (${foreign.uid}), not made by targon`)
    expect(notifications()).toEqual([])
    expect(billingUids()).toEqual([young.uid, free.uid, foreign.uid].sort())
  })

  it('reads the runway after the deletions: 14 when short (a success for the heartbeat), 11 when a VM still bills (URL/fail)', async () => {
    await ctx.setup()
    hook.received.length = 0
    const ttl = await upOne('--ttl', '1h')
    await upOne('--ttl', '5h')
    expireTtl(ttl.name)
    // A dry run reads the runway and says so in its exit code, but sends nothing and pings nothing.
    const dry = await targon(['sweep', '--min-runway', '365d', '--dry-run', '--json'], {env: heartbeatEnv()})
    expect(dry.code, dry.stdout + dry.stderr).toBe(14)
    expect(parseJson(dry).data.runway).toMatchObject({short: true})
    expect(notifications()).toEqual([])
    expect(pings()).toEqual([])
    const short = await targon(['sweep', '--min-runway', '365d', '--json'], {env: heartbeatEnv()})
    expect(short.code, short.stdout + short.stderr).toBe(14)
    const doc = parseJson(short)
    expect(doc.error.code).toBe('RUNWAY_SHORT')
    expect(doc.data.results).toMatchObject([{action: 'deleted', reason: 'ttl', uid: ttl.uid}])
    // After the deletion: only the VM left bills.
    expect(doc.data.runway).toMatchObject({burn_usd_per_hour: expect.closeTo(1.69, 2), short: true})
    expect(notifications().map((each) => each.targon.event)).toEqual(['sweep-deleted', 'runway-short'])
    expect(pings()).toEqual([`GET /ping/${HEARTBEAT_TOKEN}`])

    hook.received.length = 0
    const stuck = await upOne('--ttl', '1h')
    expireTtl(stuck.name)
    ctx.sim.inject({method: 'DELETE', path: `/workloads/${stuck.uid}`, status: 403})
    const billing = await targon(['sweep', '--min-runway', '365d', '--json'], {env: heartbeatEnv()})
    expect(billing.code, billing.stdout + billing.stderr).toBe(11)
    const failed = parseJson(billing)
    expect(failed.data.survivors).toEqual([stuck.uid])
    expect(failed.data.runway.short).toBe(true)
    expect(notifications()[0]).toMatchObject({targon: {event: 'sweep-deleted', exit_code: 11, still_billing: [stuck.uid]}})
    expect(pings()).toEqual([`GET /ping/${HEARTBEAT_TOKEN}/fail`])
    expectNoSecrets(billing)
  })

  it('pings URL/fail when the sweep fails before its lock: an invalid --fleet', async () => {
    await ctx.setup()
    hook.received.length = 0
    const sweep = await targon(['sweep', '--fleet', 'Not A Fleet', '--json'], {env: heartbeatEnv()})
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(2)
    expect(parseJson(sweep).error.message).toContain('fleet "Not A Fleet" is not valid')
    expect(pings()).toEqual([`GET /ping/${HEARTBEAT_TOKEN}/fail`])
    expectNoSecrets(sweep)
  })

  it("a guard's pass that fails before its lock is in its passes, with its exit code, and guard status says so", async () => {
    await ctx.setup()
    const passes = () =>
      readFileSync(join(ctx.configDir, 'guard', 'default.runs'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).exit_code)
    const fleet = await targon(['sweep', '--guard', '--fleet', 'Not A Fleet', '--json'])
    expect(fleet.code, fleet.stdout + fleet.stderr).toBe(2)
    // An owner that is refused (a config problem) fails the run before its lock too, and is recorded all the same.
    const owner = await targon(['sweep', '--guard', '--json'], {env: {TARGON_OWNER: 'Not An Owner'}})
    expect(owner.code, owner.stdout + owner.stderr).toBe(3)
    expect(passes()).toEqual([2, 3])
    const status = await targon(['guard', 'status'])
    expect(status.stdout + status.stderr).toContain('the last sweep exited 3')
  })

  it('a record of sent warnings that cannot be written is a warning: the deletions and the exit code stand', async () => {
    await ctx.setup()
    const soon = await upOne('--ttl', '1h')
    const expired = await upOne('--ttl', '1h')
    setTtl(ctx.configDir, soon.name, Date.now() + 10 * 60_000)
    expireTtl(expired.name)
    // A directory stands where the record goes: writing it fails.
    mkdirSync(join(ctx.configDir, 'guard', 'default.warned.json'), {recursive: true})
    const sweep = await targon(['sweep', '--warn', '15m', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const doc = parseJson(sweep)
    expect(doc.data.results).toMatchObject([{action: 'deleted', reason: 'ttl', uid: expired.uid}])
    expect(doc.data.warned).toMatchObject([{limit: 'ttl', uid: soon.uid}])
    expect(doc.warnings.join('\n')).toContain('the warnings sent could not be recorded')
    expect(billingUids()).toEqual([soon.uid])
  })

  it("names in a notification's owner field the owner its text names", async () => {
    await ctx.setup()
    hook.received.length = 0
    const alice = {TARGON_OWNER: 'alice'}
    const up = await targon([...UP, '--ttl', '1h'], {env: alice})
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm = parseJson(up).data.vms[0]
    setTtl(ctx.configDir, vm.name, Date.now() + 10 * 60_000)
    // A sweep without an owner (a team's cron), then alice's own: the warning is of alice's VM either way.
    expect((await targon(['sweep', '--warn', '15m', '--any-owner', '--json'], {env: heartbeatEnv()})).code).toBe(0)
    const [warning] = notifications().filter((each) => each.targon.event === 'sweep-warning')
    expect(warning?.text).toContain(`${vm.name} (owner alice) will be deleted at `)
    expect(warning?.targon.owner).toBe('alice')
    setTtl(ctx.configDir, vm.name, Date.now() - 60_000)
    expect((await targon(['sweep', '--json'], {env: {...heartbeatEnv(), ...alice}})).code).toBe(0)
    const [deleted] = notifications().filter((each) => each.targon.event === 'sweep-deleted')
    expect(deleted?.targon).toMatchObject({owner: 'alice', vms: [{uid: vm.uid}]})
  })

  it('warns once per VM and deadline before a TTL or budget fires; a deadline moved by extend warns again', async () => {
    await ctx.setup()
    hook.received.length = 0
    const ttl = await upOne('--ttl', '1h')
    const budget = await upOne('--max-cost', '2')
    setTtl(ctx.configDir, ttl.name, Date.now() + 10 * 60_000)
    // 2 USD at 1.69 USD/h is spent about 71 minutes after creation: 10 minutes from now.
    age(budget.uid, (2 / 1.69) * HOUR - 10 * 60_000)
    const warned = () =>
      notifications()
        .filter((each) => each.targon.event === 'sweep-warning')
        .map((each) => each.text)

    const first = await targon(['sweep', '--warn', '15m', '--json'], {env: heartbeatEnv()})
    expect(first.code, first.stdout + first.stderr).toBe(0)
    expect(
      parseJson(first)
        .data.warned.map((each: {uid: string; limit: string}) => `${each.uid} ${each.limit}`)
        .sort(),
    ).toEqual([`${ttl.uid} ttl`, `${budget.uid} max-cost`].sort())
    expect(warned()).toHaveLength(2)
    expect(warned().join('\n')).toContain(`${ttl.name} will be deleted at `)
    expect(warned().join('\n')).toContain(
      `by its TTL, at 1.69 USD/h; to postpone it: TARGON_CONFIG_DIR=${ctx.configDir} targon extend ${ttl.name} --by 1h --ttl-only`,
    )

    // The same deadlines: nothing new. Nothing is deleted either: the limits have not fired yet.
    const again = await targon(['sweep', '--warn', '15m', '--json'], {env: heartbeatEnv()})
    expect(parseJson(again).data.warned).toEqual([])
    expect(warned()).toHaveLength(2)
    expect(billingUids()).toEqual([ttl.uid, budget.uid].sort())

    // Extended past the window: no warning; a new deadline inside it (time passing) warns again, once.
    expect((await targon(['extend', ttl.name, '--by', '1h', '--max-cost', '10'])).code).toBe(0)
    expect(parseJson(await targon(['sweep', '--warn', '15m', '--json'], {env: heartbeatEnv()})).data.warned).toEqual([])
    setTtl(ctx.configDir, ttl.name, Date.now() + 5 * 60_000)
    const later = await targon(['sweep', '--guard', '--json'], {env: heartbeatEnv()})
    expect(parseJson(later).data.warned).toMatchObject([{limit: 'ttl', uid: ttl.uid}])
    expect(warned()).toHaveLength(3)

    // Then it fires, and the sweep deletes it.
    setTtl(ctx.configDir, ttl.name, Date.now() - 1000)
    const fired = await targon(['sweep', '--json'], {env: heartbeatEnv()})
    expect(parseJson(fired).data.results).toMatchObject([{action: 'deleted', reason: 'ttl', uid: ttl.uid}])
  })

  it('a second sweep of the same directory exits 0 at once, saying so, and pings nothing', async () => {
    await ctx.setup()
    hook.received.length = 0
    const ttl = await upOne('--ttl', '1h')
    expireTtl(ttl.name)
    // The simulator holds the first sweep's DELETE until the second sweep has ended: the first holds its lock throughout.
    let release = () => {}
    ctx.sim.inject({
      holdUntil: new Promise<void>((resolve) => (release = resolve)),
      method: 'DELETE',
      path: `/workloads/${ttl.uid}`,
      times: 1,
    })
    let firstPid: number | undefined
    const first = targon(['sweep', '--json'], {env: heartbeatEnv(), inProcess: false, onSpawn: (child) => (firstPid = child.pid)})
    try {
      await waitFor(() => ctx.sim.requests('DELETE', `/workloads/${ttl.uid}`).length === 1)
      // The lock file names the first sweep as its holder.
      expect(sweepLocks().map((file) => JSON.parse(readFileSync(file, 'utf8')).pid)).toEqual([firstPid])
      const second = await targon(['sweep', '--json'], {env: heartbeatEnv(), inProcess: false})
      expect(second.code, second.stdout + second.stderr).toBe(0)
      const skipped = parseJson(second).data
      expect(skipped.skipped).toBe(`another sweep of ${ctx.configDir} (profile default) is running; this one does nothing`)
      expect(skipped.results).toEqual([])
      // It ended while the first still waited on its DELETE: it sent no DELETE and no ping of its own.
      expect(ctx.sim.requests('DELETE', `/workloads/${ttl.uid}`)).toHaveLength(1)
      expect(pings()).toEqual([])
    } finally {
      release()
    }
    const done = await first
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data.results).toMatchObject([{action: 'deleted', billing: false, uid: ttl.uid}])
    expect(pings()).toEqual([`GET /ping/${HEARTBEAT_TOKEN}`])
    expect(ctx.sim.requests('DELETE', `/workloads/${ttl.uid}`)).toHaveLength(1)
    expect(billingUids()).toEqual([])
    // Released with the run: the next sweep takes the lock.
    expect(sweepLocks()).toEqual([])
  })

  it('a heartbeat URL that never answers costs a warning, one request and no retry; the sweep exits as it would', async () => {
    await ctx.setup()
    let requests = 0
    const hanging: Server = createServer(() => requests++)
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(hanging.address() as {port: number}).port}/ping/${HEARTBEAT_TOKEN}`
      const sweep = await targon(['sweep', '--json'], {env: {TARGON_HEARTBEAT_URL: url}})
      expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
      expect(parseJson(sweep).warnings.join('\n')).toContain('the heartbeat was not sent (no answer within 5 s)')
      // Pinged once, and not again after the time-out.
      expect(requests).toBe(1)
      expectNoSecrets(sweep)
    } finally {
      hanging.closeAllConnections()
      await new Promise((resolve) => hanging.close(resolve))
    }
  })

  it('reads a heartbeat reply that never ends to 4 KiB at most, and takes the ping', async () => {
    await ctx.setup()
    let requests = 0
    const flooding: Server = createServer((_request, response) => {
      requests++
      response.writeHead(200)
      const chunk = 'x'.repeat(64 * 1024)
      const pump = () => {
        while (response.write(chunk));
        response.once('drain', pump)
      }
      pump()
    })
    await new Promise<void>((resolve) => flooding.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(flooding.address() as {port: number}).port}/ping/${HEARTBEAT_TOKEN}`
      const sweep = await targon(['sweep', '--json'], {env: {TARGON_HEARTBEAT_URL: url}})
      // Exit 0, not runCli's kill: reading the endless reply to its end would never have ended the sweep.
      expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
      expect(parseJson(sweep).warnings.join('\n')).not.toContain('heartbeat')
      expect(requests).toBe(1)
    } finally {
      flooding.closeAllConnections()
      await new Promise((resolve) => flooding.close(resolve))
    }
  })

  it('never echoes a heartbeat URL: a bad one is a warning by name only that stops no deletion, a flag one is warned about', async () => {
    await ctx.setup()
    const expired = await upOne('--ttl', '1h')
    expireTtl(expired.name)
    const bad = await targon(['sweep', '--json'], {env: {TARGON_HEARTBEAT_URL: `http://hc.example.com/${HEARTBEAT_TOKEN}`}})
    expect(bad.code, bad.stdout + bad.stderr).toBe(0)
    expect(parseJson(bad).data.results).toMatchObject([{action: 'deleted', reason: 'ttl', uid: expired.uid}])
    expect(billingUids()).toEqual([])
    expect(parseJson(bad).warnings.join('\n')).toContain('TARGON_HEARTBEAT_URL must use https')
    expectNoSecrets(bad)
    const flag = await targon(['sweep', '--json', `--heartbeat-url=${hook.url.replace(HOOK_PATH, '')}/ping/${HEARTBEAT_TOKEN}`])
    expect(flag.code, flag.stdout + flag.stderr).toBe(0)
    expect(parseJson(flag).warnings.join('\n')).toContain('prefer TARGON_HEARTBEAT_URL')
    expectNoSecrets(flag)
    // Stored from stdin, like the notify URL, and masked by config list.
    const dir = tempDir('targon-config-')
    const stored = await targon(['config', 'set', 'heartbeat-url'], {
      env: {TARGON_CONFIG_DIR: dir},
      input: `https://hc-ping.com/${HEARTBEAT_TOKEN}\n`,
    })
    expect(stored.code, stored.stderr).toBe(0)
    const list = await targon(['config', 'list', '--json'], {env: {TARGON_CONFIG_DIR: dir}})
    expect(list.stdout).toContain('https://hc-ping.com/…')
    expectNoSecrets(list)
    const argv = await targon(['config', 'set', 'heartbeat-url', `https://hc-ping.com/${HEARTBEAT_TOKEN}`], {env: {TARGON_CONFIG_DIR: dir}})
    expect(argv.code).toBe(2)
    expectNoSecrets(argv)
  })
})

describe('targon sweep --team', () => {
  it('needs the team guard key; leaves a VM whose limits it cannot read, unless --default-ttl bounds it', async () => {
    await ctx.setup()
    const team = tempDir('targon-team-')
    writeConfigFile(team, {'api-key': DEFAULT_TOKEN, 'api-url': ctx.sim.url})
    const keyless = await targon(['sweep', '--team', '--json'], {config: team})
    expect(keyless.code, keyless.stdout).toBe(3)
    expect(keyless.json.error.hint).toContain('targon guard install --team')
    const alone = await targon(['sweep', '--default-ttl', '1h', '--json'], {config: team})
    expect(alone.code, alone.stdout).toBe(2)
    expect(alone.json.error.message).toContain('--default-ttl')

    const printed = await targon(['guard', 'print', '--team', '--cron', '--json'], {config: team})
    expect(printed.code, printed.stdout + printed.stderr).toBe(0)
    // Rented after the key, but never bootstrapped: it carries no limits file, and nothing here knows its limits.
    const vm = await upOne()
    age(vm.uid, 2 * HOUR)
    const left = await targon(['sweep', '--team', '--json'], {config: team})
    expect(left.code, left.stdout + left.stderr).toBe(0)
    expect(left.json.data.results).toEqual([])
    expect(left.json.data.not_covered).toMatchObject([{uid: vm.uid}])
    expect(billingUids()).toContain(vm.uid)
    const bounded = await targon(['sweep', '--team', '--default-ttl', '1h', '--json'], {config: team})
    expect(bounded.code, bounded.stdout + bounded.stderr).toBe(0)
    expect(bounded.json.data.selection).toMatchObject({default_ttl_seconds: 3600, team: true})
    expect(bounded.json.data.results).toMatchObject([{billing: false, reason: 'ttl', uid: vm.uid}])
    expect(billingUids()).not.toContain(vm.uid)
  })
})

describe('the extend command of a warning', () => {
  it('works pasted in a shell: it names the config directory, quoted, and moves the deadline', async () => {
    await ctx.setup()
    const dir = join(tempDir('targon-paste-'), "guard's config")
    const vm = await targon([...UP, '--ttl', '1h'], {env: {TARGON_CONFIG_DIR: dir}})
    expect(vm.code, vm.stderr).toBe(0)
    const {name, uid} = parseJson(vm).data.vms[0]
    const file = join(dir, 'vms', 'acme', `${name}.json`)
    const deadline = Date.now() + 10 * 60_000
    writeFileSync(file, JSON.stringify({...JSON.parse(readFileSync(file, 'utf8')), ttl_expires_at: new Date(deadline).toISOString()}))
    const sweep = await targon(['sweep', '--warn', '15m', '--json'], {env: {TARGON_CONFIG_DIR: dir}})
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const [warning] = parseJson(sweep).data.warned
    expect(warning).toMatchObject({limit: 'ttl', uid})
    expect(warning.extend_command).not.toContain(DEFAULT_TOKEN)

    // A shell of another home, where the default config directory is not the sweep's: the command alone says which.
    const pasted = await paste(`${warning.extend_command} --json`)
    expect(pasted.code, pasted.stdout + pasted.stderr).toBe(0)
    expect(Date.parse(parseJson(pasted).data.vms[0].ttl_expires_at)).toBe(deadline + HOUR)
  })

  it('a warning whose notification failed is sent again by the next sweep, then never again', async () => {
    await ctx.setup()
    hook.received.length = 0
    const ttl = await upOne('--ttl', '1h')
    setTtl(ctx.configDir, ttl.name, Date.now() + 10 * 60_000)
    const warnings = () => notifications().filter((each) => each.targon.event === 'sweep-warning')
    // The receiver refuses the first delivery.
    hook.answerStatus = 404
    try {
      const failed = await targon(['sweep', '--warn', '15m', '--json'], {env: {TARGON_NOTIFY_URL: hook.url}})
      expect(failed.code, failed.stdout + failed.stderr).toBe(0)
      expect(parseJson(failed).data.warned).toMatchObject([{limit: 'ttl', uid: ttl.uid}])
      expect(parseJson(failed).warnings).toContainEqual(expect.stringContaining('the notification was not delivered (HTTP 404)'))
    } finally {
      hook.answerStatus = 200
    }
    const again = await targon(['sweep', '--warn', '15m', '--json'], {env: {TARGON_NOTIFY_URL: hook.url}})
    expect(parseJson(again).data.warned).toMatchObject([{limit: 'ttl', uid: ttl.uid}])
    expect(warnings()).toHaveLength(2)
    const then = await targon(['sweep', '--warn', '15m', '--json'], {env: {TARGON_NOTIFY_URL: hook.url}})
    expect(parseJson(then).data.warned).toEqual([])
    expect(warnings()).toHaveLength(2)
  })

  it("a budget warning's pasted command raises the budget, and the next sweep keeps the VM past the old one", async () => {
    await ctx.setup()
    const budget = await upOne('--max-cost', '2', '--ttl', '8h')
    const ttlBefore = JSON.parse(readFileSync(join(ctx.configDir, 'vms', 'acme', `${budget.name}.json`), 'utf8')).ttl_expires_at
    // 2 USD at 1.69 USD/h is spent 10 minutes from now.
    age(budget.uid, (2 / 1.69) * HOUR - 10 * 60_000)
    const sweep = await targon(['sweep', '--warn', '15m', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const [warning] = parseJson(sweep).data.warned
    // An hour more at 1.69 USD/h on top of 2 USD.
    expect(warning).toMatchObject({
      extend_command: `TARGON_CONFIG_DIR=${ctx.configDir} targon extend ${budget.name} --max-cost 3.69`,
      limit: 'max-cost',
    })

    const pasted = await paste(`${warning.extend_command} --json`)
    expect(pasted.code, pasted.stdout + pasted.stderr).toBe(0)
    // The budget moved, the TTL did not.
    expect(parseJson(pasted).data.vms[0]).toMatchObject({max_cost_usd: 3.69, ttl_expires_at: ttlBefore})
    // The old budget is spent now: the sweep keeps the VM all the same.
    age(budget.uid, (2 / 1.69) * HOUR + 5 * 60_000)
    const next = await targon(['sweep', '--json'])
    expect(next.code, next.stdout + next.stderr).toBe(0)
    expect(parseJson(next).data.results).toEqual([])
    expect(billingUids()).toEqual([budget.uid])
  })
})
