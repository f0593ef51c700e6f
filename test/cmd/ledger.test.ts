/**
 * The spend ledger end to end: `cost` against the simulator's own ledger of billed seconds (deletions from this
 * directory and from a fresh one), a ledger that survives down, SIGKILL and concurrent runs, `credits` with its
 * runway alarm, and `cost --reconcile` against credits that fall, stay put or cannot be read.
 */
import {mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {parseJson, signalWhen, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {useWebhook} from '../helpers/webhook.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']
/**
 * The stated tolerance: a VM's billed time here runs from the deploy answer to the confirmed deletion, so it may
 * exceed the server's by those round trips and the confirming poll; 2 s per VM on this machine.
 */
const TOLERANCE_S = 2

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Every line of every ledger file of acme, parsed: each must be whole JSON. */
function ledgerLines(config: string): {kind: string; uid?: string; source?: string; how?: string}[] {
  const dir = join(config, 'ledger', 'acme')
  return readdirSync(dir).flatMap((file) =>
    readFileSync(join(dir, file), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as {kind: string}),
  )
}

async function upUids(args: string[], config = ctx.configDir): Promise<string[]> {
  const result = await targon([...UP, ...args], {config})
  expect(result.code, result.stderr).toBe(0)
  return parseJson(result).data.vms.map((vm: {uid: string}) => vm.uid)
}

function expectSecondsMatch(vms: {uid: string; seconds: number}[], uids: string[]): void {
  for (const uid of uids) {
    const vm = vms.find((each) => each.uid === uid)
    expect(vm, `${uid} is in the report`).toBeDefined()
    expect(Math.abs(vm!.seconds - ctx.sim.billableSeconds(uid))).toBeLessThanOrEqual(TOLERANCE_S)
  }
}

describe('targon cost', () => {
  it.each(['kept', 'missing'] as const)(
    'matches the billed seconds of VMs deleted here and from a fresh directory, each counted once (history %s)',
    async (history) => {
      // Deleted records turn into `error` tombstones at once, and stay listed until the test ages them out.
      await ctx.setup({history, tombstoneBounceMs: 0})
      const mine = await upUids(['--count', '2', '--fleet', 'train'])
      const theirs = await upUids(['--fleet', 'render'])
      await sleep(1500)
      expect((await targon(['down', mine[0]!, '--json'])).code).toBe(0)
      // A cron job on a fresh directory deletes the rest: it meets them running and records their start from the API.
      const fresh = tempDir('targon-fresh-')
      expect((await targon(['down', '--all', '--yes', '--json'], {config: fresh})).code).toBe(0)
      expect(ctx.sim.billing()).toEqual([])
      const all = [...mine, ...theirs]

      const freshDoc = parseJson(await targon(['cost', '--by', 'fleet', '--json'], {config: fresh}))
      // Version 2: `apart` became `excluded` (docs/json-contract-changes.md).
      expect(freshDoc.schema_version).toBe(2)
      const fromFresh = freshDoc.data
      expect(fromFresh.estimate).toBe(true)
      expect(fromFresh.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual([mine[1], theirs[0]].sort())
      for (const vm of fromFresh.vms) expect([vm.start_source, vm.end_source]).toEqual(['api-created', 'deleted'])
      expectSecondsMatch(fromFresh.vms, [mine[1]!, theirs[0]!])

      // Here, the VMs deleted elsewhere are `error` tombstones the server's history tells: each ends at its deletion.
      // Without the history they are records nobody here classified: excluded, with their open duration.
      const here = parseJson(await targon(['cost', '--by', 'fleet', '--json'])).data
      if (history === 'kept') {
        expect(here.excluded).toEqual([])
        expect(here.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual([...all].sort())
        expectSecondsMatch(here.vms, all)
      } else {
        expectSecondsMatch(here.vms, [mine[0]!])
        expect(here.vms.map((vm: {uid: string}) => vm.uid)).toEqual([mine[0]])
        expect(here.excluded.map((vm: {uid: string}) => vm.uid).sort()).toEqual([mine[1], theirs[0]].sort())
        expect(here.total_usd).toBe(here.vms[0].estimated_usd)
      }

      // Once those records vanish, the history's ends are kept; without it, each ends when its record last changed.
      ctx.sim.ageOutTombstones()
      const later = parseJson(await targon(['cost', '--by', 'fleet', '--json'])).data
      expect(later.excluded).toEqual([])
      expect(later.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual([...all].sort())
      expectSecondsMatch(later.vms, all)
      const ends = Object.fromEntries(
        later.vms.map((vm: {uid: string; end_source: string; bounded: boolean}) => [vm.uid, [vm.end_source, vm.bounded]]),
      )
      const elsewhere = history === 'kept' ? ['tombstone', false] : ['last-seen', true]
      expect(ends).toEqual({[mine[0]!]: ['deleted', false], [mine[1]!]: elsewhere, [theirs[0]!]: elsewhere})
      const billedUsd = ctx.sim.billedUsd('acme')
      expect(Math.abs(later.total_usd - billedUsd)).toBeLessThanOrEqual((all.length * TOLERANCE_S * 1.69) / 3600)
      const train = later.groups.find((group: {key: string}) => group.key === 'train')
      expect(train.vms).toBe(2)
      expect(Math.abs(train.seconds - ctx.sim.billableSeconds(mine[0]!) - ctx.sim.billableSeconds(mine[1]!))).toBeLessThanOrEqual(
        2 * TOLERANCE_S,
      )
    },
  )

  it('keeps whole lines through a SIGKILL and two concurrent runs, and counts a VM the killed run left billing', async () => {
    await ctx.setup({deployTiming: {addressMs: 4000, runningMs: 4000}})
    const killed = await targon(UP, {inProcess: false, onSpawn: signalWhen(() => ctx.sim.billing().length > 0, 'SIGKILL', 300)})
    expect(killed.signal).toBe('SIGKILL')
    const [orphan] = ctx.sim.billing()
    const [a, b] = await Promise.all([
      targon([...UP, '--fleet', 'a'], {inProcess: false}),
      targon([...UP, '--fleet', 'b'], {inProcess: false}),
    ])
    expect(a.code, a.stderr).toBe(0)
    expect(b.code, b.stderr).toBe(0)
    const lines = ledgerLines(ctx.configDir)
    const starts = lines.filter((line) => line.kind === 'start')
    expect(starts.filter((line) => line.uid === orphan!.uid).map((line) => line.source)).toContain('deploy')
    expect(new Set(starts.map((line) => line.uid)).size).toBe(3)

    const open = parseJson(await targon(['cost', '--by', 'vm', '--json'])).data
    expect(open.vms).toHaveLength(3)
    expect(open.vms.every((vm: {end_source: string}) => vm.end_source === 'open')).toBe(true)
    expectSecondsMatch(
      open.vms,
      ctx.sim.billing().map((workload) => workload.uid),
    )

    expect((await targon(['down', '--all', '--yes', '--json'])).code).toBe(0)
    const after = parseJson(await targon(['cost', '--by', 'vm', '--json'])).data
    expect(after.vms).toHaveLength(3)
    expect(after.vms.every((vm: {end_source: string}) => vm.end_source === 'deleted')).toBe(true)
    expectSecondsMatch(after.vms, [orphan!.uid, ...after.vms.map((vm: {uid: string}) => vm.uid)])
  })

  it('counts what starts billing inside down: a crash it must wake to delete, a registered leftover it wakes', async () => {
    await ctx.setup()
    const [crashed] = await upUids([])
    ctx.sim.crash(crashed!)
    const leftover = ctx.sim.addWorkload({name: 'tcli-default-leftover1'})
    // A fresh directory never saw the crash billing: the refused DELETE proves it does.
    const fresh = tempDir('targon-fresh-')
    const down = await targon(['down', '--all', '--wake-registered', '--yes', '--json'], {config: fresh})
    expect(down.code, down.stderr).toBe(0)
    expect(ctx.sim.billing()).toEqual([])
    const report = parseJson(await targon(['cost', '--by', 'vm', '--json'], {config: fresh})).data
    const sources = Object.fromEntries(
      report.vms.map((vm: {uid: string; start_source: string; end_source: string}) => [vm.uid, [vm.start_source, vm.end_source]]),
    )
    expect(sources).toEqual({[crashed!]: ['api-created', 'deleted'], [leftover.uid]: ['wake-registered', 'deleted']})
    expectSecondsMatch(report.vms, [crashed!, leftover.uid])

    // A wake-up Targon refuses never starts billing: no start line, nothing in the report.
    const refused = ctx.sim.addWorkload({name: 'tcli-default-leftover2'})
    ctx.sim.inject({
      body: JSON.stringify({reason: 'INVALID_STATE', message: 'no'}),
      method: 'POST',
      path: `${refused.uid}/deploy`,
      status: 400,
    })
    const failed = await targon(['down', refused.uid, '--wake-registered', '--yes', '--json'], {config: fresh})
    expect(failed.code).toBe(11)
    expect(ledgerLines(fresh).filter((line) => line.uid === refused.uid && line.kind === 'start')).toEqual([])
  })

  it('refuses a range that ends before it starts, and says when the range reaches back before the ledger', async () => {
    await ctx.setup()
    const reversed = await targon(['cost', '--from', '2026-11-10', '--to', '2026-11-01'])
    expect(reversed.code).toBe(2)
    expect(reversed.stderr).toMatch(/--from must come before --to/)
    const early = parseJson(await targon(['cost', '--from', '2020-01-01', '--json'])).data
    expect(early.complete).toBe(false)
    expect(early.incomplete_reason).toMatch(/ledger is empty|ledger begins/)
    // A month from long ago, past a retention of 30 days: deleted whole, and a report reaching back says so.
    const dir = join(ctx.configDir, 'ledger', 'acme')
    mkdirSync(dir, {mode: 0o700, recursive: true})
    const old = {...{fleet: 'train', gpu_count: 1, gpu_model: null, name: 'tcli-train-old', owner: null, price_per_hour: 1.69}}
    writeFileSync(
      join(dir, '2025-01.ndjson'),
      `${JSON.stringify({...old, at: '2025-01-05T00:00:00Z', kind: 'start', recorded_at: '2025-01-05T00:00:00Z', resource: null, source: 'deploy', uid: 'wrk-old'})}\n`,
      {mode: 0o600},
    )
    const pruned = await targon(['cost', '--from', '2025-01-01', '--json'], {env: {TARGON_LEDGER_DAYS: '30'}})
    expect(parseJson(pruned).warnings).toContainEqual(expect.stringMatching(/deleted the ledger months 2025-01: older than 30 days/))
    expect(parseJson(pruned).data).toMatchObject({
      complete: false,
      incomplete_reason: expect.stringMatching(/through 2025-01 were deleted/),
    })
    // Found gone by the same run, it ended before this month began: it went with its month.
    expect(parseJson(pruned).data.vms).toEqual([])
    expect(readdirSync(dir)).not.toContain('2025-01.ndjson')

    await upUids(['--fleet', 'train'])
    const text = await targon(['cost', '--by', 'fleet', '--since', '1h'])
    expect(text.code).toBe(0)
    expect(text.stdout.split('\n').slice(0, 2)).toEqual([
      'FLEET\tVMS\tBILLED_H\tEST_USD',
      expect.stringMatching(/^train\t1\t0\.00\t0\.0\d{3}$/),
    ])
    expect(text.stdout).toMatch(/^Total: about 0\.0\d{3} USD \(estimate\)/m)
    expect(text.stdout).toMatch(/^Estimates: hourly price × billed time, a VM still billing up to now/m)
  })
})

describe('targon credits', () => {
  const hook = useWebhook()

  it('shows credits, the burn rate of every VM billing in the org and the runway; --min-runway exits 14 and notifies', async () => {
    await ctx.setup()
    const alice = {TARGON_OWNER: 'alice'}
    expect((await targon(UP, {env: alice})).code).toBe(0)
    // A colleague's VM, and one another tool made: in the org's burn rate, not in alice's share.
    expect((await targon(UP, {config: tempDir('targon-colleague-'), env: {TARGON_OWNER: 'bob'}})).code).toBe(0)
    ctx.sim.addWorkload({deployedAt: Date.now(), name: 'render-box', status: 'running'})
    const shown = parseJson(await targon(['credits', '--json'], {env: alice})).data
    expect(shown.burn_usd_per_hour).toBeCloseTo(3 * 1.69, 6)
    expect(shown.billing_vms).toBe(3)
    expect(shown.mine).toEqual({billing_vms: 1, burn_usd_per_hour: 1.69, owner: 'alice'})
    expect(shown.credits).toBeLessThan(40)
    expect(shown.runway_hours).toBeCloseTo(shown.credits / (3 * 1.69), 1)
    expect(shown.short).toBe(false)

    expect((await targon(['credits', '--min-runway', '6h', '--json'])).code).toBe(0)
    const short = await targon(['credits', '--min-runway', '1d', '--json'], {env: {TARGON_NOTIFY_URL: hook.url}})
    expect(short.code).toBe(14)
    const envelope = parseJson(short)
    expect(envelope.error.code).toBe('RUNWAY_SHORT')
    expect(envelope.data.short).toBe(true)
    expect(hook.received).toHaveLength(1)
    expect(hook.received[0]!.body.targon).toMatchObject({event: 'runway-short', exit_code: 14})
    expect(hook.received[0]!.body.text).toMatch(/less than 24h/)

    const text = await targon(['credits', '--min-runway', '1d'])
    expect(text.code).toBe(14)
    expect(text.stdout).toMatch(/^Runway: 7h\d+m/m)
  })

  it('prints every rate per hour in one format: cents, below a dollar too', async () => {
    await ctx.setup()
    ctx.sim.addWorkload({cost_per_hour: 0.59, deployedAt: Date.now(), name: 'cheap-box', status: 'running'})
    const text = await targon(['credits'], {env: {TARGON_OWNER: 'alice'}})
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toContain('Burn rate: 0.59 USD/h over 1 billing VM(s) in the org')
    const rates = text.stdout.match(/[\d.]+ USD\/h/g) ?? []
    expect(rates.length).toBeGreaterThan(1)
    for (const rate of rates) expect(rate).toMatch(/^\d+\.\d{2} USD\/h$/)
  })

  it('an unreadable wallet is an error with a hint, not a runway of zero', async () => {
    await ctx.setup({credits: 'unreadable'})
    const result = await targon(['credits', '--min-runway', '6h'])
    expect(result.code).toBe(3)
    expect(result.stderr).toMatch(/Hint: use an API key that may read the org's wallet/)
  })
})

describe('targon cost --reconcile', () => {
  async function creditsCheck(credits: 'falling' | 'unchanged' | 'unreadable') {
    await ctx.setup({credits})
    await upUids(['--count', '2'])
    if (credits !== 'unreadable') {
      expect((await targon(['credits', '--json'])).code).toBe(0)
      await sleep(2000)
    }

    return parseJson(await targon(['cost', '--since', '1h', '--reconcile', '--json'])).data.reconcile
  }

  it('puts the drop of falling credits next to the estimate over the same interval', async () => {
    const check = await creditsCheck('falling')
    expect(check.verdict).toBe('matches')
    // Both VMs billed through the whole interval between the readings, so only the readings' own timing differs:
    // within half a second of each VM, a quarter of the drop over these 2 s.
    expect(check.credits_drop_usd).toBeGreaterThan((2 * 1.9 * 1.69) / 3600)
    expect(Math.abs(check.difference_usd)).toBeLessThanOrEqual((2 * 0.5 * 1.69) / 3600)
    expect(check.unseen.join(' ')).toMatch(/rentals, sandboxes/)

    // A range that ended before the readings of the last run compares only what lies in it: here, one reading.
    const first = Date.parse(check.from)
    const past = await targon([
      'cost',
      '--from',
      new Date(first - 60_000).toISOString(),
      '--to',
      new Date(first + 500).toISOString(),
      '--reconcile',
      '--json',
    ])
    expect(parseJson(past).data.reconcile.verdict).toBe('one-reading')
  })

  it('says so when the credits do not move, or cannot be read', async () => {
    const unchanged = await creditsCheck('unchanged')
    expect(unchanged.verdict).toBe('credits-unchanged')
    expect(unchanged.estimated_usd).toBeGreaterThan(0)
    const unreadable = await creditsCheck('unreadable')
    expect(unreadable.verdict).toBe('unreadable')
  })
})
