/**
 * Ledger files outlive the version of targon that wrote them: a month's file written before the code gave its line
 * kinds and sources other names must still be read, to the same intervals as the same events recorded now.
 */
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import type {VmFacts} from '../../src/lib/domain/ledger/schema.js'
import {type Interval, type Sighting, intervalsOf} from '../../src/lib/domain/ledger/intervals.js'
import {recordListing, recordStart, recordStop} from '../../src/lib/domain/ledger/ledger.js'
import {LedgerStore} from '../../src/lib/domain/ledger/store.js'
import {tempDir} from '../helpers/cli.js'

const T = Date.parse('2026-11-03T10:00:00Z')
const MIN = 60_000
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * November's file as the first version of the ledger wrote it for the events of `record` below, byte for byte: every
 * line kind, every start source and every end source.
 */
const FIRST_VERSION_FILE = [
  '{"name":"tcli-train-deploy","fleet":"train","owner":"alice","resource":"rtx6000b-small","gpu_model":"RTX-PRO-6000B","gpu_count":1,"price_per_hour":1.69,"kind":"start","uid":"wrk-deploy","at":"2026-11-03T10:00:00.000Z","source":"deploy","recorded_at":"2026-11-03T10:00:00.000Z"}',
  '{"name":"tcli-train-wake","fleet":"train","owner":"alice","resource":"rtx6000b-small","gpu_model":"RTX-PRO-6000B","gpu_count":1,"price_per_hour":2.5,"kind":"start","uid":"wrk-wake","at":"2026-11-03T10:01:00.000Z","source":"wake-registered","recorded_at":"2026-11-03T10:01:00.000Z"}',
  '{"kind":"stop","uid":"wrk-wake","at":"2026-11-03T10:02:00.000Z","how":"deleted","recorded_at":"2026-11-03T10:02:00.000Z"}',
  '{"name":"tcli-train-api","fleet":"train","owner":"alice","resource":"rtx6000b-small","gpu_model":"RTX-PRO-6000B","gpu_count":1,"price_per_hour":1.69,"kind":"start","uid":"wrk-api","at":"2026-11-03T09:00:00.000Z","source":"api-created","recorded_at":"2026-11-03T10:05:00.000Z"}',
  '{"name":"tcli-train-first","fleet":"train","owner":"alice","resource":"rtx6000b-small","gpu_model":"RTX-PRO-6000B","gpu_count":1,"price_per_hour":null,"kind":"start","uid":"wrk-first","at":"2026-11-03T10:05:00.000Z","source":"first-seen","recorded_at":"2026-11-03T10:05:00.000Z"}',
  '{"kind":"unclear","uid":"wrk-api","at":"2026-11-03T10:40:00.000Z","updated_at":"2026-11-03T10:38:00.000Z"}',
  '{"kind":"seen","uids":["wrk-deploy","wrk-first"],"at":"2026-11-03T10:40:00.000Z"}',
  '{"kind":"stop","uid":"wrk-api","at":"2026-11-03T10:45:00.000Z","how":"tombstone","recorded_at":"2026-11-03T10:50:00.000Z"}',
  '{"kind":"stop","uid":"wrk-first","at":"2026-11-03T10:40:00.000Z","how":"last-seen","recorded_at":"2026-11-03T10:50:00.000Z"}',
  '{"kind":"stop","uid":"wrk-deploy","at":"2026-11-03T11:00:00.000Z","how":"deleted","recorded_at":"2026-11-03T11:00:00.000Z"}',
  '{"kind":"seen","uids":["wrk-first"],"at":"2026-11-03T11:20:00.000Z"}',
  '{"kind":"credits","at":"2026-11-03T11:30:00.000Z","credits":41.5,"currency":"USD"}',
  '{"kind":"pruned","at":"2026-11-03T11:31:00.000Z","through":"2025-09"}',
]
  .map((line) => `${line}\n`)
  .join('')

function facts(name: string, price: number | null): VmFacts {
  return {fleet: 'train', gpu_count: 1, gpu_model: 'RTX-PRO-6000B', name, owner: 'alice', price_per_hour: price, resource: 'rtx6000b-small'}
}

const DEPLOY = facts('tcli-train-deploy', 1.69)
const WAKE = facts('tcli-train-wake', 2.5)
const API = facts('tcli-train-api', 1.69)
const FIRST = facts('tcli-train-first', null)

function listed(uid: string, vm: VmFacts, changes: Partial<Sighting> = {}): Sighting {
  return {...vm, billing: true, createdAt: null, gone: false, uid, updatedAt: null, ...changes}
}

/**
 * The events, through the ledger's own calls: a deploy deleted here; a registered VM woken to delete it; a VM made
 * elsewhere, met running, then an unclassified `error` record, then a tombstone; a VM with no creation time and no
 * price, found gone, then seen billing again (which voids its end); a credit reading; a pruning.
 */
function record(config: string): LedgerStore {
  const listing = (at: number, sightings: Sighting[]) => recordListing(config, 'acme', {listedAt: at, sightings, unreadable: new Set()}, at)
  recordStart(config, 'acme', {facts: DEPLOY, source: 'deploy', uid: 'wrk-deploy'}, T)
  recordStart(config, 'acme', {facts: WAKE, source: 'wake-registered', uid: 'wrk-wake'}, T + MIN)
  recordStop(config, 'acme', 'wrk-wake', T + 2 * MIN)
  listing(T + 5 * MIN, [listed('wrk-deploy', DEPLOY), listed('wrk-api', API, {createdAt: iso(T - 60 * MIN)}), listed('wrk-first', FIRST)])
  listing(T + 40 * MIN, [
    listed('wrk-deploy', DEPLOY),
    listed('wrk-api', API, {billing: null, updatedAt: iso(T + 38 * MIN)}),
    listed('wrk-first', FIRST),
  ])
  listing(T + 50 * MIN, [listed('wrk-deploy', DEPLOY), listed('wrk-api', API, {billing: false, gone: true, updatedAt: iso(T + 45 * MIN)})])
  recordStop(config, 'acme', 'wrk-deploy', T + 60 * MIN)
  listing(T + 80 * MIN, [listed('wrk-first', FIRST)])
  const store = new LedgerStore(config, 'acme')
  store.append([{at: iso(T + 90 * MIN), credits: 41.5, currency: 'USD', kind: 'credits'}], T + 90 * MIN)
  store.append([{at: iso(T + 91 * MIN), kind: 'pruned', through: '2025-09'}], T + 91 * MIN)
  return store
}

/** What each line of a file is, as it is on disk: its kind, and its start or end source. */
function shapes(text: string): string[] {
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as {kind: string; source?: string; how?: string})
    .map((line) => [line.kind, line.source ?? line.how].filter(Boolean).join(' '))
}

describe('a ledger file of the first version', () => {
  it('reads whole, to the intervals its events give when recorded now', () => {
    const old = new LedgerStore(tempDir('targon-ledger-'), 'acme')
    mkdirSync(old.dir, {mode: 0o700, recursive: true})
    writeFileSync(join(old.dir, '2026-11.ndjson'), FIRST_VERSION_FILE, {mode: 0o600})
    const read = old.read()
    expect(read.problems).toEqual([])
    expect(read.lines).toHaveLength(13)
    expect(read.prunedThrough).toBe('2025-09')
    expect(read.lines.filter((line) => line.kind === 'credits')).toEqual([
      {at: iso(T + 90 * MIN), credits: 41.5, currency: 'USD', kind: 'credits'},
    ])

    const intervals = intervalsOf(read.lines)
    const interval = (uid: string, vm: VmFacts, rest: Omit<Interval, keyof VmFacts | 'uid'>): [string, Interval] => [
      uid,
      {...vm, uid, ...rest},
    ]
    expect(intervals).toEqual(
      new Map([
        interval('wrk-deploy', DEPLOY, {
          end: T + 60 * MIN,
          endSource: 'deleted',
          foundGoneAt: null,
          lastSeen: T + 40 * MIN,
          start: T,
          startSource: 'deploy',
          unclearUpdatedAt: null,
        }),
        interval('wrk-wake', WAKE, {
          end: T + 2 * MIN,
          endSource: 'deleted',
          foundGoneAt: null,
          lastSeen: T + MIN,
          start: T + MIN,
          startSource: 'wake-registered',
          unclearUpdatedAt: null,
        }),
        interval('wrk-api', API, {
          end: T + 45 * MIN,
          endSource: 'tombstone',
          foundGoneAt: null,
          lastSeen: T + 5 * MIN,
          start: T - 60 * MIN,
          startSource: 'api-created',
          unclearUpdatedAt: T + 38 * MIN,
        }),
        // Found gone at T+50 min (last seen at T+40), then seen billing again: the end is void.
        interval('wrk-first', FIRST, {
          end: null,
          endSource: null,
          foundGoneAt: null,
          lastSeen: T + 80 * MIN,
          start: T + 5 * MIN,
          startSource: 'first-seen',
          unclearUpdatedAt: null,
        }),
      ]),
    )

    // The same events recorded by this version: the same intervals, from lines of the same kinds and sources.
    const now = record(tempDir('targon-ledger-'))
    expect(intervalsOf(now.read().lines)).toEqual(intervals)
    expect(shapes(readFileSync(join(now.dir, '2026-11.ndjson'), 'utf8'))).toEqual(shapes(FIRST_VERSION_FILE))
  })
})
