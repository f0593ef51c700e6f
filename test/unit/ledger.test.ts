/**
 * The spend ledger: how lines become one interval per VM (whoever wrote them, however often), what a listing adds,
 * how billed time splits by day, and the files themselves (0600, whole lines, pruning by whole months).
 */
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {
  type Interval,
  type Sighting,
  SIGHTING_EVERY_MS,
  billedByDay,
  billedWithin,
  intervalsOf,
  linesFromListing,
} from '../../src/lib/domain/ledger/intervals.js'
import type {LedgerLine} from '../../src/lib/domain/ledger/lines.js'
import {LedgerStore} from '../../src/lib/domain/ledger/store.js'
import {MEASURE_MAX_MS, MEASURE_MIN_MS, measuredBurn} from '../../src/lib/workflows/spend/credits.js'
import {tempDir} from '../helpers/cli.js'

const T0 = Date.parse('2026-11-30T22:00:00Z')
const MIN = 60_000
const iso = (ms: number) => new Date(ms).toISOString()
const FACTS = {
  fleet: 'train',
  gpu_count: 1,
  gpu_model: 'RTX-PRO-6000B',
  name: 'tcli-train-a',
  owner: null,
  price_per_hour: 1.69,
  resource: 'rtx6000b-small',
}

type StartLine = Extract<LedgerLine, {kind: 'start'}>

function start(uid: string, at: number, source: 'api-created' | 'deploy' = 'deploy', recordedAt = at): StartLine {
  return {...FACTS, at: iso(at), kind: 'start', recorded_at: iso(recordedAt), source, uid}
}

function stop(uid: string, at: number, how: 'deleted' | 'last-seen' | 'tombstone' = 'deleted', recordedAt = at): LedgerLine {
  return {at: iso(at), how, kind: 'stop', recorded_at: iso(recordedAt), uid}
}

function sighting(uid: string, changes: Partial<Sighting> = {}): Sighting {
  return {...FACTS, billing: true, createdAt: iso(T0), gone: false, uid, updatedAt: iso(T0), ...changes}
}

function only(intervals: Map<string, Interval>, uid: string): Interval {
  const interval = intervals.get(uid)
  expect(interval).toBeDefined()
  return interval as Interval
}

describe('intervals', () => {
  it('combines the lines of several writers into one interval: the deploy start, the confirmed deletion', () => {
    const intervals = intervalsOf([
      start('wrk-1', T0 - 5000, 'api-created', T0 + 10 * MIN),
      start('wrk-1', T0),
      start('wrk-1', T0 + 1000),
      stop('wrk-1', T0 + 30 * MIN + 5000, 'tombstone', T0 + 40 * MIN),
      stop('wrk-1', T0 + 30 * MIN),
    ])
    expect(intervals.size).toBe(1)
    const interval = only(intervals, 'wrk-1')
    expect([interval.start, interval.startSource]).toEqual([T0, 'deploy'])
    expect([interval.end, interval.endSource]).toEqual([T0 + 30 * MIN, 'deleted'])
    expect(billedWithin(interval, 0, Number.MAX_SAFE_INTEGER, T0 + 99 * MIN)).toBe(30 * MIN)
  })

  it('takes what the chosen start lacks from the other starts, and ignores a stop without a start', () => {
    const intervals = intervalsOf([
      {...start('wrk-1', T0), price_per_hour: null},
      start('wrk-1', T0 - 1000, 'api-created'),
      stop('wrk-2', T0),
    ])
    expect(only(intervals, 'wrk-1').price_per_hour).toBe(1.69)
    expect(intervals.has('wrk-2')).toBe(false)
  })

  it('voids an end written before a later sighting: the listing showed it billing again', () => {
    const intervals = intervalsOf([
      start('wrk-1', T0),
      stop('wrk-1', T0 + 10 * MIN, 'last-seen', T0 + 20 * MIN),
      {at: iso(T0 + 25 * MIN), kind: 'seen', uids: ['wrk-1']},
    ])
    const interval = only(intervals, 'wrk-1')
    expect(interval.end).toBeNull()
    expect(interval.lastSeen).toBe(T0 + 25 * MIN)
  })

  it('splits billed time by UTC day and clips it to the range', () => {
    const interval = only(intervalsOf([start('wrk-1', T0), stop('wrk-1', T0 + 3 * 3_600_000)]), 'wrk-1')
    expect([...billedByDay(interval, 0, Number.MAX_SAFE_INTEGER, T0 + 9e9)]).toEqual([
      ['2026-11-30', 2 * 3_600_000],
      ['2026-12-01', 3_600_000],
    ])
    expect(billedWithin(interval, T0 + 3_600_000, T0 + 2 * 3_600_000, T0 + 9e9)).toBe(3_600_000)
    const open = only(intervalsOf([start('wrk-2', T0)]), 'wrk-2')
    expect(billedWithin(open, 0, Number.MAX_SAFE_INTEGER, T0 + 90_000)).toBe(90_000)
  })
})

describe('what a listing adds', () => {
  it('starts a VM met billing at its created_at, or at the listing when the API gives no sensible time', () => {
    const lines = linesFromListing(
      new Map(),
      {
        listedAt: T0 + MIN,
        sightings: [sighting('wrk-1'), sighting('wrk-2', {createdAt: null}), sighting('wrk-3', {createdAt: iso(T0 + 9 * MIN)})],
        unreadable: new Set(),
      },
      T0 + MIN,
    )
    expect(lines.map((line) => line.kind === 'start' && [line.uid, line.source, line.at])).toEqual([
      ['wrk-1', 'api-created', iso(T0)],
      ['wrk-2', 'first-seen', iso(T0 + MIN)],
      ['wrk-3', 'first-seen', iso(T0 + MIN)],
    ])
  })

  it('writes one seen line for the VMs not seen for SIGHTING_EVERY_MS, and nothing for those seen recently', () => {
    const intervals = intervalsOf([start('wrk-1', T0), start('wrk-2', T0 + SIGHTING_EVERY_MS)])
    const listing = {
      listedAt: T0 + SIGHTING_EVERY_MS + 1000,
      sightings: [sighting('wrk-1'), sighting('wrk-2')],
      unreadable: new Set<string>(),
    }
    expect(linesFromListing(intervals, listing, listing.listedAt)).toEqual([{at: iso(listing.listedAt), kind: 'seen', uids: ['wrk-1']}])
  })

  it('sights every VM seen billing for a report, however recently seen: a later end comes no earlier', () => {
    const lines: LedgerLine[] = [start('wrk-1', T0)]
    const listedAt = T0 + MIN
    lines.push(...linesFromListing(intervalsOf(lines), {listedAt, sightings: [sighting('wrk-1')], unreadable: new Set()}, listedAt, true))
    expect(lines.at(-1)).toEqual({at: iso(listedAt), kind: 'seen', uids: ['wrk-1']})
    // Gone by the next listing: it ends at the report's listing, not at its start.
    lines.push(...linesFromListing(intervalsOf(lines), {listedAt: T0 + 5 * MIN, sightings: [], unreadable: new Set()}, T0 + 5 * MIN))
    expect(only(intervalsOf(lines), 'wrk-1')).toMatchObject({end: listedAt, endSource: 'last-seen'})
  })

  it("ends a VM found gone at the tombstone's updated_at, and one that vanished at its last sighting", () => {
    const intervals = intervalsOf([start('wrk-1', T0), start('wrk-2', T0), start('wrk-3', T0), start('wrk-4', T0)])
    const now = T0 + 20 * MIN
    const lines = linesFromListing(
      intervals,
      {
        listedAt: now,
        sightings: [sighting('wrk-1', {billing: false, gone: true, updatedAt: iso(T0 + 5 * MIN)})],
        // Failed the API checks: it may be this VM, so it is not taken for gone.
        unreadable: new Set(['wrk-3']),
      },
      now,
    )
    expect(lines).toEqual([
      stop('wrk-1', T0 + 5 * MIN, 'tombstone', now),
      stop('wrk-2', T0, 'last-seen', now),
      stop('wrk-4', T0, 'last-seen', now),
    ])
    const after = intervalsOf([start('wrk-1', T0), start('wrk-2', T0), ...lines])
    expect(only(after, 'wrk-2').foundGoneAt).toBe(now)
  })

  it('leaves alone a VM whose start was written after the listing was asked for (a deploy it could not show yet)', () => {
    const intervals = intervalsOf([start('wrk-1', T0 + 2000)])
    expect(linesFromListing(intervals, {listedAt: T0 + 1000, sightings: [], unreadable: new Set()}, T0 + 3000)).toEqual([])
  })

  it('notes an unclassified error record once, and ends it, bounded, no earlier than that record’s time when it vanishes', () => {
    const lines: LedgerLine[] = [start('wrk-1', T0)]
    const error = sighting('wrk-1', {billing: null, updatedAt: iso(T0 + 7 * MIN)})
    for (const listedAt of [T0 + 8 * MIN, T0 + 9 * MIN])
      lines.push(...linesFromListing(intervalsOf(lines), {listedAt, sightings: [error], unreadable: new Set()}, listedAt))
    expect(lines.filter((line) => line.kind === 'unclear')).toHaveLength(1)
    lines.push(...linesFromListing(intervalsOf(lines), {listedAt: T0 + 20 * MIN, sightings: [], unreadable: new Set()}, T0 + 20 * MIN))
    const interval = only(intervalsOf(lines), 'wrk-1')
    expect([interval.end, interval.endSource, interval.foundGoneAt]).toEqual([T0 + 7 * MIN, 'last-seen', T0 + 20 * MIN])
  })
})

describe('ledger files', () => {
  it('appends whole 0600 lines to the month of the write, and skips a torn line with a warning', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    expect(store.append([start('wrk-1', T0), stop('wrk-1', T0 + MIN)], T0)).toBeUndefined()
    expect(store.append([start('wrk-2', T0 + 3 * 3_600_000)], T0 + 3 * 3_600_000)).toBeUndefined()
    expect(readdirSync(store.dir).sort()).toEqual(['2026-11.ndjson', '2026-12.ndjson'])
    const file = join(store.dir, '2026-11.ndjson')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(3)
    appendFileSync(file, '{"kind":"start","uid":"wrk-3"')
    const read = store.read()
    expect(read.lines).toHaveLength(3)
    expect(read.problems).toEqual([expect.stringMatching(/ignoring 1 unreadable line/)])
  })

  it('carries what is open into a new month, so that the latest month alone holds every open interval', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const october = Date.parse('2026-10-10T00:00:00Z')
    store.append([start('wrk-open', october), start('wrk-done', october), stop('wrk-done', october + MIN)], october)
    store.append([{at: iso(october + 9 * MIN), kind: 'seen', uids: ['wrk-open']}], october + 9 * MIN)
    const december = Date.parse('2026-12-02T00:00:00Z')
    store.append([{at: iso(december), credits: 12, currency: 'USD', kind: 'credits'}], december)
    expect(readdirSync(store.dir).sort()).toEqual(['2026-10.ndjson', '2026-12.ndjson'])
    const carried = readFileSync(join(store.dir, '2026-12.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(carried.map((line) => [line.kind, line.uid ?? null])).toEqual([
      ['start', 'wrk-open'],
      ['credits', null],
    ])
    // Read alone (as a listing reads it), the new month knows the open VM, its start and its last sighting.
    rmSync(join(store.dir, '2026-10.ndjson'))
    const open = only(intervalsOf(store.readLatest().lines), 'wrk-open')
    expect([open.start, open.startSource, open.lastSeen, open.end]).toEqual([october, 'deploy', october + 9 * MIN, null])
  })

  it('reads for a report from the last file before its range on, and misses nothing across months without a file', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const at = (text: string) => Date.parse(`${text}T00:00:00Z`)
    // January: the ledger begins with a VM met running; seen until Feb 20, found gone Feb 21.
    store.append([start('wrk-jan', at('2026-01-05'), 'api-created')], at('2026-01-05'))
    store.append([{at: iso(at('2026-02-20')), kind: 'seen', uids: ['wrk-jan']}, start('wrk-feb', at('2026-02-20'))], at('2026-02-20'))
    store.append([stop('wrk-jan', at('2026-02-20'), 'last-seen', at('2026-02-21'))], at('2026-02-21'))
    // No file for March; wrk-feb is deleted in April, and May has a line of its own.
    store.append([stop('wrk-feb', at('2026-04-10'))], at('2026-04-10'))
    store.append([{at: iso(at('2026-05-02')), credits: 3, currency: 'USD', kind: 'credits'}], at('2026-05-02'))
    expect(readdirSync(store.dir).sort()).toEqual(['2026-01.ndjson', '2026-02.ndjson', '2026-04.ndjson', '2026-05.ndjson'])

    // A listing in May, with neither VM listed, adds nothing: the latest file knows both ended.
    expect(
      linesFromListing(
        intervalsOf(store.readLatest().lines),
        {listedAt: at('2026-05-03'), sightings: [], unreadable: new Set()},
        at('2026-05-03'),
      ),
    ).toEqual([])
    const march = intervalsOf(store.read(at('2026-03-01')).lines)
    expect(billedWithin(only(march, 'wrk-feb'), at('2026-03-01'), at('2026-04-01'), at('2026-05-03'))).toBe(31 * 86_400_000)
    const february = intervalsOf(store.read(at('2026-02-01')).lines)
    expect([only(february, 'wrk-jan').end, only(february, 'wrk-jan').endSource]).toEqual([at('2026-02-20'), 'last-seen'])
    expect(store.read(at('2026-03-01')).since).toBe(at('2026-01-05'))
  })

  it('finds, through the carry, an interval that began before the first file a report reads', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const at = (text: string) => Date.parse(`${text}T00:00:00Z`)
    store.append([start('wrk-long', at('2026-01-10'))], at('2026-01-10'))
    store.append([{at: iso(at('2026-02-10')), kind: 'seen', uids: ['wrk-long']}], at('2026-02-10'))
    store.append([stop('wrk-long', at('2026-03-20'))], at('2026-03-20'))
    // From March 15 the report reads February on: the January start is there only as February's carry.
    const march = only(intervalsOf(store.read(at('2026-03-15')).lines), 'wrk-long')
    expect([march.start, march.end]).toEqual([at('2026-01-10'), at('2026-03-20')])
  })

  it("carries into a new month what that month's first lines reopen", () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const at = (text: string) => Date.parse(`${text}T00:00:00Z`)
    store.append([start('wrk-b', at('2026-11-10'))], at('2026-11-10'))
    store.append([stop('wrk-b', at('2026-11-29'), 'last-seen', at('2026-11-30'))], at('2026-11-30'))
    // December's first write is a listing that sees it billing again: the stop is void, and December must know it.
    store.append([{at: iso(at('2026-12-02')), kind: 'seen', uids: ['wrk-b']}], at('2026-12-02'))
    const open = only(intervalsOf(store.readLatest().lines), 'wrk-b')
    expect([open.start, open.end, open.lastSeen]).toEqual([at('2026-11-10'), null, at('2026-12-02')])
  })

  it('writes to the latest file, never behind it: a run from before midnight, a clock that was ahead once', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const at = (text: string) => Date.parse(text)
    store.append([start('wrk-1', at('2026-12-01T00:00:01Z'))], at('2026-12-01T00:00:01Z'))
    store.append([start('wrk-2', at('2026-11-30T23:59:59Z'))], at('2026-11-30T23:59:59Z'))
    expect(readdirSync(store.dir)).toEqual(['2026-12.ndjson'])
    store.append([start('wrk-3', at('2027-05-01T00:00:00Z'))], at('2027-05-01T00:00:00Z'))
    store.append([stop('wrk-1', at('2026-12-02T00:00:00Z'))], at('2026-12-02T00:00:00Z'))
    const latest = intervalsOf(store.readLatest().lines)
    expect([...latest.keys()].sort()).toEqual(['wrk-1', 'wrk-2', 'wrk-3'])
    expect(only(latest, 'wrk-1').end).toBe(at('2026-12-02T00:00:00Z'))
  })

  it("ignores a new month's temporary file that a killed run left, and tidies it away once it is stale", () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    store.append([start('wrk-1', T0)], T0)
    const stale = join(store.dir, '2026-12.ndjson.0123456789ab.tmp')
    writeFileSync(stale, '{"kind":"start"', {mode: 0o600})
    utimesSync(stale, new Date(T0 - 2 * 3_600_000), new Date(T0 - 2 * 3_600_000))
    store.append([stop('wrk-1', T0 + 3 * 3_600_000)], T0 + 3 * 3_600_000)
    expect(only(intervalsOf(store.read().lines), 'wrk-1').end).toBe(T0 + 3 * 3_600_000)
    expect(store.prune(400, T0 + 3 * 3_600_000)).toEqual({deleted: []})
    expect(readdirSync(store.dir).sort()).toEqual(['2026-11.ndjson', '2026-12.ndjson'])
  })

  it('starts a new line after a torn one, so that the next batch is whole', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    store.append([start('wrk-1', T0)], T0)
    appendFileSync(join(store.dir, '2026-11.ndjson'), '{"kind":"stop","uid":"wrk-1","at":"2026-')
    store.append([stop('wrk-1', T0 + MIN)], T0 + MIN)
    const read = store.read()
    expect(read.problems).toEqual([expect.stringMatching(/ignoring 1 unreadable line/)])
    expect(only(intervalsOf(read.lines), 'wrk-1').end).toBe(T0 + MIN)
  })

  it('never writes through a link planted in place of a month file, and never fails the run', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    mkdirSync(store.dir, {mode: 0o700, recursive: true})
    const target = join(config, 'elsewhere')
    writeFileSync(target, '')
    symlinkSync(target, join(store.dir, '2026-11.ndjson'))
    expect(store.append([start('wrk-1', T0)], T0)).toMatch(/could not record spend/)
    expect(readFileSync(target, 'utf8')).toBe('')
  })

  it('refuses a month file others can read, and prunes only whole months past the retention, saying so', () => {
    const config = tempDir('targon-ledger-')
    const store = new LedgerStore(config, 'acme')
    const day = 86_400_000
    for (const [uid, at] of [
      ['wrk-1', Date.parse('2025-09-15T00:00:00Z')],
      ['wrk-2', Date.parse('2025-10-20T00:00:00Z')],
    ] as const)
      store.append([start(uid, at), stop(uid, at + MIN)], at)
    // 2025-10 ended 2025-11-01: 30 days of retention end it on 2025-12-01, not before.
    const now = Date.parse('2025-11-30T00:00:00Z')
    expect(store.prune(30, now)).toEqual({deleted: ['2025-09']})
    expect(store.prune(30, now + 2 * day)).toEqual({deleted: ['2025-10']})
    const read = store.read()
    expect(read.prunedThrough).toBe('2025-10')
    expect(read.lines.filter((line) => line.kind === 'start')).toEqual([])

    // A pruning that cannot say so deletes nothing: a report must never lose months without knowing.
    const later = now + 40 * day
    symlinkSync(join(config, 'nowhere'), join(store.dir, '2026-01.ndjson'))
    expect(store.prune(30, later)).toEqual({deleted: [], problem: expect.stringMatching(/could not record spend/)})
    expect(readdirSync(store.dir)).toContain('2025-11.ndjson')
    rmSync(join(store.dir, '2026-01.ndjson'))

    const file = join(store.dir, '2025-12.ndjson')
    chmodSync(file, 0o644)
    expect(store.append([start('wrk-3', now + 2 * day)], now + 2 * day)).toMatch(/not a private file/)
  })
})

const HOUR_MS = 3_600_000

describe('the measured burn of credits', () => {
  const now = Date.parse('2026-11-20T12:00:00Z')
  const reading = (msAgo: number, credits: number): LedgerLine => ({
    at: new Date(now - msAgo).toISOString(),
    credits,
    currency: 'USD',
    kind: 'credits',
  })

  it('takes the oldest reading from 15 min to 6 h ago, and none too close, too old or lower', () => {
    const latest = {at: now, credits: 90, currency: 'USD'}
    expect(measuredBurn([reading(2 * HOUR_MS, 93.38), reading(HOUR_MS, 91.69)], latest)).toEqual({overMs: 2 * HOUR_MS, usdPerHour: 1.69})
    expect(measuredBurn([reading(MEASURE_MIN_MS - 1, 95)], latest)).toBeNull()
    expect(measuredBurn([reading(MEASURE_MAX_MS + 1, 95)], latest)).toBeNull()
    // A top-up between the readings measures nothing.
    expect(measuredBurn([reading(HOUR_MS, 80)], latest)).toBeNull()
  })
})
