/**
 * Ends from the server's history for VMs that ended out of sight (workflows/spend/history-ends.ts, intervals.ts
 * historyStop), against histories a hostile or broken server could send, on a fake clock: the end moves only between
 * the last sighting and the listing that found the VM gone, never lower and never further, and each history is read
 * at most once.
 */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {newHistoryBudget} from '../../src/lib/domain/deletion/history.js'
import {type Interval, historyStop, intervalsOf} from '../../src/lib/domain/ledger/intervals.js'
import type {LedgerLine} from '../../src/lib/domain/ledger/lines.js'
import {LocalState} from '../../src/lib/adapters/state/local-state.js'
import type {TargonClient} from '../../src/lib/adapters/targon/client.js'
import {endsFromHistory} from '../../src/lib/workflows/spend/history-ends.js'
import {tempDir} from '../helpers/cli.js'
import {fakeClock} from '../helpers/fake-clock.js'

const T0 = Date.parse('2026-11-10T09:00:00Z')
const MIN = 60_000
const iso = (ms: number) => new Date(ms).toISOString()
/** Seen billing last at T0+10, found gone by the listing at T0+60; the report runs at T0+90. */
const LAST_SEEN = T0 + 10 * MIN
const FOUND_GONE = T0 + 60 * MIN
const NOW = T0 + 90 * MIN
const FACTS = {fleet: 'train', gpu_count: 1, gpu_model: 'H200', name: 'tcli-train-a', owner: null, price_per_hour: 2, resource: 'h200'}

/** The ledger of a VM that ended out of sight: started at T0, last seen at LAST_SEEN, found gone at FOUND_GONE. */
function endedOutOfSight(uid: string): LedgerLine[] {
  return [
    {...FACTS, at: iso(T0), kind: 'start', recorded_at: iso(T0), source: 'api-created', uid},
    {at: iso(LAST_SEEN), kind: 'seen', uids: [uid]},
    {at: iso(LAST_SEEN), how: 'last-seen', kind: 'stop', recorded_at: iso(FOUND_GONE), uid},
  ]
}

const event = (minutes: number, status: unknown) => ({created_at: iso(T0 + minutes * MIN), new_status: status})

type Page = {items: unknown[]; nextCursor?: string} | TargonError

/** An API client whose only answers are these history pages, by uid (then by cursor, '' for the first); it counts reads. */
function historyServer(pages: Record<string, Page[]>) {
  const reads: string[] = []
  const client = {
    http: {options: {}},
    withSignal: () => client,
    async workloadEventsPage(_org: string, uid: string, cursor: string | undefined) {
      reads.push(uid)
      const page = pages[uid]?.[Number(cursor ?? 0)]
      if (page === undefined) throw new TargonError('NOT_FOUND', 'workload not found')
      if (page instanceof TargonError) throw page
      return {items: page.items, nextCursor: page.nextCursor}
    },
  }
  return {client: client as unknown as TargonClient, reads}
}

/** The ends a cost report run at NOW gets for these VMs' histories, as intervals by uid. */
async function reportEnds(pages: Record<string, Page[]>, options: {listed?: string[]; state?: LocalState} = {}) {
  const lines = Object.keys(pages).flatMap(endedOutOfSight)
  const {client, reads} = historyServer(pages)
  const clock = fakeClock(NOW)
  const state = options.state ?? new LocalState(tempDir('targon-config-'))
  const stops = await endsFromHistory(client, state, 'acme', [...intervalsOf(lines).values()], new Set(options.listed ?? []), {
    budget: newHistoryBudget(),
    clock,
  })
  return {intervals: intervalsOf([...lines, ...stops]), reads, state, stops}
}

const endOf = (intervals: Map<string, Interval>, uid: string) => {
  const interval = intervals.get(uid) as Interval
  return [interval.end === null ? null : (interval.end - T0) / MIN, interval.endSource]
}

describe('the end of a VM that ended out of sight, from its history', () => {
  it("is the history's delete, newest first or out of order, duplicated or not", async () => {
    const {intervals, reads} = await reportEnds({
      honest: [{items: [event(30.5, 'error'), event(30, 'deleted'), event(0, 'running')]}],
      shuffled: [
        {items: [event(0, 'provisioning'), event(30.5, 'ERROR'), event(30, 'deleted'), event(1, 'running'), event(30, 'deleted')]},
      ],
      paged: [{items: [event(0, 'running')], nextCursor: '1'}, {items: [event(42, 'deleted')]}],
    })
    expect(endOf(intervals, 'honest')).toEqual([30, 'history'])
    expect(endOf(intervals, 'shuffled')).toEqual([30, 'history'])
    expect(endOf(intervals, 'paged')).toEqual([42, 'history'])
    expect(reads.filter((uid) => uid !== 'paged').sort()).toEqual(['honest', 'shuffled'])
  })

  it('never falls below the last sighting, nor reaches past the listing that found it gone', async () => {
    const {intervals} = await reportEnds({
      early: [{items: [event(5, 'deleted')]}],
      epoch: [{items: [{created_at: '1970-01-01T00:00:00Z', new_status: 'deleted'}]}],
      late: [{items: [event(75, 'deleted')]}],
      future: [{items: [{created_at: '2099-01-01T00:00:00Z', new_status: 'deleted'}]}],
    })
    expect(endOf(intervals, 'early')).toEqual([10, 'history'])
    expect(endOf(intervals, 'epoch')).toEqual([10, 'history'])
    expect(endOf(intervals, 'late')).toEqual([60, 'history'])
    expect(endOf(intervals, 'future')).toEqual([60, 'history'])
  })

  it('stays at the last sighting, bounded, when the history is missing, empty, hostile, undone or unreachable', async () => {
    const {intervals, stops} = await reportEnds({
      missing: [],
      empty: [{items: []}],
      junk: [{items: [{created_at: `${iso(T0)}\u001b[2J`, new_status: {nested: 'deleted'}}, event(30, 'deleted')]}],
      undone: [{items: [event(30, 'deleted'), event(35, 'running')]}],
      noDate: [{items: [{created_at: 'yesterday', new_status: 'deleted'}]}],
      loop: [{items: [event(0, 'running')], nextCursor: '0'}],
      trouble: [new TargonError('API_ERROR', 'upstream trouble')],
    })
    expect(stops).toEqual([])
    for (const uid of intervals.keys()) expect(endOf(intervals, uid)).toEqual([10, 'last-seen'])
  })

  it('reads each history once per run, then never for an end it found, and hourly at most for one it did not', async () => {
    const pages = {gone: [{items: [event(30, 'deleted')]}], crashed: [{items: [event(0, 'running'), event(20, 'error')]}]}
    const first = await reportEnds(pages)
    expect(first.reads.sort()).toEqual(['crashed', 'gone'])
    // The next report, within the hour, in the same directory: the crash is kept; the end is in the ledger.
    const again = await reportEnds({crashed: pages.crashed}, {state: first.state})
    expect(again.reads).toEqual([])
  })

  it('asks nothing about a VM still listed, nor about an end already confirmed', async () => {
    const {client, reads} = historyServer({})
    const lines: LedgerLine[] = [
      ...endedOutOfSight('listed'),
      {...FACTS, at: iso(T0), kind: 'start', recorded_at: iso(T0), source: 'deploy', uid: 'deleted-here'},
      {at: iso(T0 + 30 * MIN), how: 'deleted', kind: 'stop', recorded_at: iso(T0 + 30 * MIN), uid: 'deleted-here'},
      {...FACTS, at: iso(T0), kind: 'start', recorded_at: iso(T0), source: 'deploy', uid: 'running'},
    ]
    const state = new LocalState(tempDir('targon-config-'))
    const options = {budget: newHistoryBudget(), clock: fakeClock(NOW)}
    expect(await endsFromHistory(client, state, 'acme', [...intervalsOf(lines).values()], new Set(['listed']), options)).toEqual([])
    expect(reads).toEqual([])
  })

  it('gives no end to an interval that did not end out of sight', () => {
    const open = intervalsOf([{...FACTS, at: iso(T0), kind: 'start', recorded_at: iso(T0), source: 'deploy', uid: 'open'}]).get('open')!
    expect(historyStop(open, T0 + 30 * MIN, NOW)).toBeUndefined()
    const outOfSight = intervalsOf(endedOutOfSight('gone')).get('gone')!
    expect(historyStop(outOfSight, Number.NaN, NOW)).toBeUndefined()
  })
})
