/**
 * From ledger lines to billing intervals, and from a listing to the lines it adds. Pure: no files, no clock.
 *
 * A VM bills over one interval: from its deploy until its deletion (a suspended VM bills on, so waking it starts
 * nothing new). Many runs, concurrent ones included, write lines about the same VM into one directory's ledger;
 * lines are combined per uid, so that nothing is counted twice:
 * - the start is the deploy this directory saw accepted, else the API's created_at of a VM a listing found;
 * - the end is a deletion confirmed here, else a tombstone's updated_at, else the last time it was seen, billing or
 *   as an unclassified `error` record (`bounded`: billing stopped between then and the listing that found it gone),
 *   until the server's history of the VM gives its `deleted` event (historyStop: `cost` asks, for the ends it reports);
 * - a sighting after an end voids it: the listing showed the VM billing again, and the listing is the truth.
 */
import type {BILLING_END_SOURCES, BILLING_START_SOURCES, VmFacts} from './schema.js'
import type {LedgerLine} from './lines.js'

export type BillingStartSource = (typeof BILLING_START_SOURCES)[number]
export type BillingEndSource = (typeof BILLING_END_SOURCES)[number]

/**
 * How often a VM seen billing gets a sighting (a `seen` line): the most a `bounded` end can fall short by, beyond the
 * gaps between listings. Every listing reads these lines (bench figure 14); a VM deleted elsewhere is mostly caught by
 * its tombstone or `error` record, so they need not be frequent.
 */
export const SIGHTING_EVERY_MS = 30 * 60_000

export interface Interval extends VmFacts {
  uid: string
  start: number
  startSource: BillingStartSource
  /** null while it bills (or nothing has said that it stopped). */
  end: number | null
  endSource: BillingEndSource | null
  /** For a `last-seen` end: when the VM was found gone (billing stopped between `end` and this). */
  foundGoneAt: number | null
  /** The latest time this directory saw it billing. */
  lastSeen: number
  /** The latest updated_at of the `error` record it was listed as, unclassified (see the `unclear` line). */
  unclearUpdatedAt: number | null
}

/** Which line wins when several say where a VM's billing starts, or ends: the lowest number, then the earliest time. */
const START_PREFERENCE: Record<BillingStartSource, number> = {'api-created': 1, deploy: 0, 'first-seen': 2, 'wake-registered': 0}
const END_PREFERENCE: Record<BillingEndSource, number> = {deleted: 0, history: 1, 'last-seen': 2, tombstone: 1}

type StartLine = Extract<LedgerLine, {kind: 'start'}>
type StopLine = Extract<LedgerLine, {kind: 'stop'}>

/** The billing interval of every VM the ledger has a start line for, by uid. */
export function intervalsOf(lines: readonly LedgerLine[]): Map<string, Interval> {
  const starts = new Map<string, StartLine[]>()
  const stops = new Map<string, StopLine[]>()
  const lastSeenBilling = new Map<string, number>()
  const unclear = new Map<string, number>()
  const latest = (map: Map<string, number>, uid: string, at: number) => map.set(uid, Math.max(map.get(uid) ?? at, at))
  const add = <T>(map: Map<string, T[]>, uid: string, line: T) => (map.get(uid) ?? map.set(uid, []).get(uid)!).push(line)
  for (const line of lines) {
    if (line.kind === 'start') {
      add(starts, line.uid, line)
      latest(lastSeenBilling, line.uid, Date.parse(line.recorded_at))
    } else if (line.kind === 'seen') {
      const at = Date.parse(line.at)
      for (const uid of line.uids) latest(lastSeenBilling, uid, at)
    } else if (line.kind === 'stop') {
      add(stops, line.uid, line)
    } else if (line.kind === 'unclear') {
      latest(unclear, line.uid, Date.parse(line.updated_at))
    }
  }

  const intervals = new Map<string, Interval>()
  for (const [uid, candidates] of starts) {
    const [chosen, ...others] = [...candidates].sort(
      (a, b) => START_PREFERENCE[a.source] - START_PREFERENCE[b.source] || Date.parse(a.at) - Date.parse(b.at),
    ) as [StartLine, ...StartLine[]]
    const start = Date.parse(chosen.at)
    const lastSeen = Math.max(lastSeenBilling.get(uid) ?? start, start)
    // A stop written before the VM was last seen billing is void (this directory's own clock on both sides).
    const stop = [...(stops.get(uid) ?? [])]
      .filter((line) => Date.parse(line.recorded_at) >= lastSeen)
      .sort((a, b) => END_PREFERENCE[a.how] - END_PREFERENCE[b.how] || Date.parse(a.at) - Date.parse(b.at))[0]
    intervals.set(uid, {
      ...mergedFacts(chosen, others),
      end: stop ? Math.max(start, Date.parse(stop.at)) : null,
      endSource: stop?.how ?? null,
      foundGoneAt: stop?.how === 'last-seen' ? Date.parse(stop.recorded_at) : null,
      lastSeen,
      start,
      startSource: chosen.source,
      unclearUpdatedAt: unclear.get(uid) ?? null,
      uid,
    })
  }

  return intervals
}

/** The facts of a start line, a sighting or an interval, alone. */
function factsOf(from: VmFacts): VmFacts {
  return {
    fleet: from.fleet,
    gpu_count: from.gpu_count,
    gpu_model: from.gpu_model,
    name: from.name,
    owner: from.owner,
    price_per_hour: from.price_per_hour,
    resource: from.resource,
  }
}

/** The chosen start's facts, with what it lacks taken from the other start lines. */
function mergedFacts(chosen: StartLine, others: StartLine[]): VmFacts {
  const facts = factsOf(chosen)
  for (const other of others) {
    for (const key of Object.keys(facts) as (keyof VmFacts)[]) {
      if (facts[key] === null) (facts as Record<string, unknown>)[key] = other[key]
    }
  }

  return facts
}

/** A listed VM as the ledger needs it. */
export interface Sighting extends VmFacts {
  uid: string
  /** It costs money now (true), it does not (false), or nobody knows yet (null: an `error` record not classified). */
  billing: boolean | null
  /** A tombstone or `deleted` record. */
  gone: boolean
  createdAt: string | null
  updatedAt: string | null
}

export interface Listing {
  sightings: Sighting[]
  /** uids of listed items that failed the API checks: they may be VMs the ledger knows, so none of them is taken for gone. */
  unreadable: ReadonlySet<string>
  /** When the listing was asked for: an interval whose VM was seen billing since may be one it could not show yet. */
  listedAt: number
}

/**
 * The lines a listing adds to the ledger: starts of VMs found billing, one sighting of the VMs seen billing, the `error`
 * records nobody here has classified, and the ends of VMs found gone. `everySighting`: the sighting names every VM seen
 * billing, however recently it was seen: a report that counts them up to this listing must find them billing at least
 * that long in every later one.
 */
export function linesFromListing(
  intervals: ReadonlyMap<string, Interval>,
  listing: Listing,
  now: number,
  everySighting = false,
): LedgerLine[] {
  const lines: LedgerLine[] = []
  const at = new Date(now).toISOString()
  // What the listing showed, it showed when it was asked for: a deletion confirmed meanwhile is not voided by it.
  const sightedAt = new Date(listing.listedAt).toISOString()
  // The VMs due a sighting: seen billing again after an end, or not for SIGHTING_EVERY_MS (unless everySighting).
  const sighted: string[] = []
  const listed = new Set(listing.sightings.map((sighting) => sighting.uid))
  for (const sighting of listing.sightings) {
    const interval = intervals.get(sighting.uid)
    if (sighting.billing === true && !sighting.gone) {
      if (!interval) lines.push(startFromListing(sighting, listing.listedAt))
      else if (interval.end !== null || listing.listedAt - interval.lastSeen >= (everySighting ? 1 : SIGHTING_EVERY_MS))
        sighted.push(sighting.uid)
    } else if (sighting.gone && interval && interval.end === null) {
      const updated = timeOf(sighting.updatedAt)
      // Never before it was last seen billing, nor after now: the two clocks may disagree.
      lines.push(
        updated === null
          ? lastSeenStop(interval, interval.lastSeen, at)
          : tombstoneStop(interval, Math.min(now, Math.max(updated, interval.lastSeen)), at),
      )
    } else if (sighting.billing === null && interval && interval.end === null) {
      const updated = timeOf(sighting.updatedAt)
      if (updated !== null && updated !== interval.unclearUpdatedAt)
        lines.push({at: sightedAt, kind: 'unclear', uid: sighting.uid, updated_at: new Date(updated).toISOString()})
    }
  }

  if (sighted.length > 0) lines.push({at: sightedAt, kind: 'seen', uids: sighted})
  for (const interval of intervals.values()) {
    const missing = !listed.has(interval.uid) && !listing.unreadable.has(interval.uid)
    if (missing && interval.end === null && interval.lastSeen < listing.listedAt) lines.push(vanishedStop(interval, now, at))
  }

  return lines
}

/**
 * A VM no longer listed ended after it was last seen: billing, or as an `error` record nobody here classified (a
 * tombstone, most likely, as a crash stays listed until deleted; but the deletion of a crash may have come later).
 */
function vanishedStop(interval: Interval, now: number, at: string): LedgerLine {
  return lastSeenStop(interval, Math.min(now, Math.max(interval.lastSeen, interval.unclearUpdatedAt ?? interval.lastSeen)), at)
}

function tombstoneStop(interval: Interval, end: number, at: string): LedgerLine {
  return {at: new Date(end).toISOString(), how: 'tombstone', kind: 'stop', recorded_at: at, uid: interval.uid}
}

function timeOf(text: string | null): number | null {
  const ms = text === null ? Number.NaN : Date.parse(text)
  return Number.isNaN(ms) ? null : ms
}

/**
 * A start line for a VM a listing shows billing that the ledger has no start for (made elsewhere, or before the
 * ledger): from the API's created_at, or from the listing when it gives none that makes sense.
 */
function startFromListing(sighting: Sighting, now: number): LedgerLine {
  const created = timeOf(sighting.createdAt)
  const known = created !== null && created <= now
  return {
    ...factsOf(sighting),
    uid: sighting.uid,
    at: new Date(known ? created : now).toISOString(),
    kind: 'start',
    recorded_at: new Date(now).toISOString(),
    source: known ? 'api-created' : 'first-seen',
  }
}

function lastSeenStop(interval: Interval, end: number, recordedAt: string): LedgerLine {
  return {at: new Date(end).toISOString(), how: 'last-seen', kind: 'stop', recorded_at: recordedAt, uid: interval.uid}
}

/**
 * The end that the `deleted` event of the server's history (at `deletedAt`) gives a VM that ended out of sight (a
 * `last-seen` end), or undefined for any other. The history is untrusted and this directory's own sightings are not: the
 * end moves only within what they leave open, never before the `last-seen` end (it was seen billing, or its record
 * changed, until then, and reports have counted up to it) nor after the listing that found it gone. An event out of
 * order, from the future or from a skewed clock cannot make the estimate fall, nor grow past that listing.
 */
export function historyStop(interval: Interval, deletedAt: number, now: number): LedgerLine | undefined {
  if (interval.endSource !== 'last-seen' || interval.end === null || interval.foundGoneAt === null) return undefined
  if (!Number.isFinite(deletedAt)) return undefined
  const end = Math.min(interval.foundGoneAt, Math.max(interval.end, deletedAt))
  return {at: new Date(end).toISOString(), how: 'history', kind: 'stop', recorded_at: new Date(now).toISOString(), uid: interval.uid}
}

/** Milliseconds of the interval within [from, to); an open one runs up to `now`. */
export function billedWithin(interval: Interval, from: number, to: number, now: number): number {
  const end = Math.min(interval.end ?? now, to)
  return Math.max(0, end - Math.max(interval.start, from))
}

/** The interval's milliseconds within [from, to) per UTC day (YYYY-MM-DD). */
export function billedByDay(interval: Interval, from: number, to: number, now: number): Map<string, number> {
  const days = new Map<string, number>()
  let cursor = Math.max(interval.start, from)
  const end = Math.min(interval.end ?? now, to)
  while (cursor < end) {
    const dayEnd = Math.min(end, Math.floor(cursor / 86_400_000) * 86_400_000 + 86_400_000)
    const day = new Date(cursor).toISOString().slice(0, 10)
    days.set(day, (days.get(day) ?? 0) + dayEnd - cursor)
    cursor = dayEnd
  }

  return days
}

/** What a new month's file begins with: each open interval's start, last sighting and unclear record, and the last pruning. */
export function carriedLines(intervals: ReadonlyMap<string, Interval>, prunedThrough: string | null, now: number): LedgerLine[] {
  const lines: LedgerLine[] = []
  const at = new Date(now).toISOString()
  if (prunedThrough !== null) lines.push({at, kind: 'pruned', through: prunedThrough})
  for (const interval of intervals.values()) {
    if (interval.end !== null) continue
    lines.push({
      ...factsOf(interval),
      at: new Date(interval.start).toISOString(),
      kind: 'start',
      // Recorded at its last sighting: this directory knew of it then, and no earlier than its first line.
      recorded_at: new Date(interval.lastSeen).toISOString(),
      source: interval.startSource,
      uid: interval.uid,
    })
    if (interval.unclearUpdatedAt !== null)
      lines.push({at, kind: 'unclear', uid: interval.uid, updated_at: new Date(interval.unclearUpdatedAt).toISOString()})
  }

  return lines
}
