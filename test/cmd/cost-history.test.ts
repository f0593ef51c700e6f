/**
 * Cost from the server's history: three config directories that saw the same VMs at different times, one of them
 * never after their deletion by a fourth, give one total for the closed day, and no directory's estimate of a VM falls
 * once the VM has ended out of its sight. The day is played on a clock set by the test (Date alone is faked: timers,
 * sockets and the simulator run as usual), so that every time in it is exact.
 */
import {afterEach, beforeEach, describe, expect, it, vi} from 'vitest'

import {tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const DAY = '2026-11-10'

beforeEach(() => {
  vi.useFakeTimers({toFake: ['Date']})
})
afterEach(() => {
  vi.useRealTimers()
})

/** Sets the clock of the day (or of the next, `next`) to hh:mm UTC. */
function at(time: string, next = false): void {
  vi.setSystemTime(new Date(`${next ? '2026-11-11' : DAY}T${time}:00Z`))
}

interface CostVm {
  uid: string
  estimated_usd: number
  end_source: string
  bounded: boolean
}

async function costByVm(config: string, args: string[] = ['--since', '1d']): Promise<{total_usd: number; vms: CostVm[]; reconcile: any}> {
  const result = await targon(['cost', '--by', 'vm', ...args, '--json'], {config})
  expect(result.code, result.stderr).toBe(0)
  return result.json.data
}

const perVm = (report: {vms: CostVm[]}) => Object.fromEntries(report.vms.map((vm) => [vm.uid, vm.estimated_usd]))

describe.each(['kept', 'missing'] as const)('cost of a closed day in three directories (history %s)', (history) => {
  it('agrees with the server when the history is there, and never falls when the VMs end out of sight', async () => {
    await ctx.setup({bootDelayMs: 0, history, historyOutlivesListing: true})
    const [alice, cron, laptop, guard] = ['alice', 'cron', 'laptop', 'guard'].map((name) => tempDir(`targon-${name}-`)) as [
      string,
      string,
      string,
      string,
    ]
    const run = async (config: string, args: string[]) => {
      const result = await targon(args, {config})
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
      return result
    }

    at('08:55')
    await run(laptop, ['credits', '--json'])
    at('09:00')
    const up = await run(alice, ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--count', '2', '--json'])
    const uids: string[] = up.json.data.vms.map((vm: {uid: string}) => vm.uid)
    at('09:05')
    await run(cron, ['status', '--json'])
    // Each looks once more while they run, at a time of its own, and is shown what they cost so far.
    at('09:10')
    const aliceWhileRunning = perVm(await costByVm(alice))
    at('09:20')
    const laptopWhileRunning = perVm(await costByVm(laptop))
    at('09:25')
    const cronWhileRunning = perVm(await costByVm(cron))
    for (const seen of [aliceWhileRunning, laptopWhileRunning, cronWhileRunning]) expect(Object.keys(seen).sort()).toEqual([...uids].sort())

    // A guard elsewhere deletes them; only the cron directory looks while the tombstones are listed.
    at('09:40')
    await run(guard, ['down', '--all', '--yes', '--json'])
    expect(ctx.sim.billing()).toEqual([])
    at('09:45')
    await run(cron, ['status', '--json'])
    // Ten minutes on, the tombstones have left the listing: alice and the laptop find the VMs gone.
    at('10:00')
    await run(laptop, ['credits', '--json'])
    const aliceAfter = perVm(await costByVm(alice))
    const laptopAfter = perVm(await costByVm(laptop))
    for (const uid of uids) {
      expect(aliceAfter[uid]).toBeGreaterThanOrEqual(aliceWhileRunning[uid]!)
      expect(laptopAfter[uid]).toBeGreaterThanOrEqual(laptopWhileRunning[uid]!)
    }

    at('01:00', true)
    const day = ['--from', DAY, '--to', DAY]
    const reports = {
      alice: await costByVm(alice, day),
      cron: await costByVm(cron, day),
      laptop: await costByVm(laptop, [...day, '--reconcile']),
    }
    for (const [who, report] of Object.entries(reports)) {
      const seenWhileRunning = {alice: aliceWhileRunning, cron: cronWhileRunning, laptop: laptopWhileRunning}[who]!
      for (const uid of uids) expect(perVm(report)[uid], `${who}: ${uid}`).toBeGreaterThanOrEqual(seenWhileRunning[uid]!)
    }

    if (history === 'kept') {
      // 2 VMs × 40 min, as the server billed them, in every directory.
      const billed = ctx.sim.billedUsd('acme')
      for (const report of Object.values(reports)) expect(Math.abs(report.total_usd - billed)).toBeLessThan(0.0001)
      const ends = (report: {vms: CostVm[]}) => [...new Set(report.vms.map((vm) => `${vm.end_source} ${vm.bounded}`))]
      expect(ends(reports.alice)).toEqual(['history false'])
      expect(ends(reports.laptop)).toEqual(['history false'])
      expect(ends(reports.cron)).toEqual(['tombstone false'])
      expect(reports.laptop.reconcile).toMatchObject({estimated_usd: expect.closeTo(reports.laptop.total_usd, 3), verdict: 'matches'})
      // Each history was read once, and no more once its end is in the ledger.
      const reads = ctx.sim.requests('GET', '/events').length
      await costByVm(alice, day)
      expect(ctx.sim.requests('GET', '/events')).toHaveLength(reads)
    }
  })
})
