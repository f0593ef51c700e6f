/**
 * `targon cost` without the rendering: the spend ledger (after this run's own listing was told to it) reduced to
 * the VMs that billed within a range, priced, grouped and split by UTC day. Every figure is an estimate: price ×
 * billed time, from the ledger's intervals, an open one up to this run's listing; a VM that ended out of sight ends
 * at the `deleted` event of the server's history where it has one (history-ends.ts). A VM whose end or price is
 * unknown is listed as excluded, never in the totals and never dropped.
 */
import type {ListingRun} from '../../domain/fleet/run.js'
import type {CostExcluded, CostGroup, CostGrouping, CostResult, CostVm} from './schema.js'
import {ageSeconds, createdAt, roundUsd} from '../../domain/fleet/estimates.js'
import {type KnownVm, billingUncertain, invalidWarning, readFleet} from '../../domain/fleet/fleet-read.js'
import {type Interval, billedByDay, billedWithin, intervalsOf} from '../../domain/ledger/intervals.js'
import {LedgerStore, monthEnd} from '../../domain/ledger/store.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {checkAgainstCredits} from './credits-check.js'
import {recordHistoryStops, recordFleetRead} from '../../domain/ledger/ledger.js'
import {endsFromHistory} from './history-ends.js'

const COST_BASIS =
  "estimates: each VM's hourly price × its billed time, from its deploy (or the API's created_at for a VM met running) to the confirmed end of its billing (a deletion, a tombstone, or the deleted event of the server's history of a VM that ended out of sight); a VM still billing counts up to now; Targon reports no charges per VM"

const UNKNOWN_END =
  "listed as an error record that neither a delete note here nor the server's history classifies: a crash (which bills) or a deletion made elsewhere; whether it bills is unknown"

export interface CostOptions {
  org: string
  from: number
  /** The end of the range; null: now. */
  to: number | null
  fleet: string | null
  by: CostGrouping
  /** --reconcile: also check the estimates against the drop in credits (credits-check.ts). */
  checkCredits: boolean
  /** Whole months older than this are deleted first (TARGON_LEDGER_DAYS). */
  retentionDays: number
}

export async function runCost(run: ListingRun, client: TargonClient, state: LocalState, options: CostOptions): Promise<CostResult> {
  const {clock} = run
  const view = await readFleet(client, options.org, state, {clock, historyBudget: run.historyBudget})
  for (const problem of view.problems) run.warn(problem)
  // Every VM seen billing gets a sighting now, and the report counts it up to that sighting (not to a later now): no
  // later report, here or after the VM ended out of sight, can count it for less.
  recordFleetRead(state, options.org, view, clock, true)
  // Nothing of them can enter the ledger: say so, since they may bill.
  if (view.invalid.length > 0) run.warn(invalidWarning(view.invalid))
  const now = view.listing.listedAt
  const to = options.to === null ? now : Math.min(options.to, now)
  const store = new LedgerStore(state.dir, options.org)
  const pruned = store.prune(options.retentionDays, clock.now())
  if (pruned.problem) run.warn(`the ledger was not pruned: ${pruned.problem}`)
  if (pruned.deleted.length > 0)
    run.warn(`deleted the ledger months ${pruned.deleted.join(', ')}: older than ${options.retentionDays} days`)
  const read = store.read(options.from)
  for (const problem of read.problems) run.warn(problem)
  const listed = new Map(view.vms.map((vm) => [vm.uid, vm]))
  // With --reconcile every fleet's estimate is compared with the credits, so every fleet's ends are asked about.
  const inRange = (interval: Interval) =>
    (options.checkCredits || options.fleet === null || interval.fleet === options.fleet) &&
    // Overlapping the range, even for no time at all: a bounded end seen only at its start is still shown.
    interval.start < to &&
    (interval.end ?? now) >= options.from
  const recorded = intervalsOf(read.lines)
  const ends = await endsFromHistory(
    client,
    state,
    options.org,
    [...recorded.values()].filter((interval) => inRange(interval) && interval.price_per_hour !== null),
    new Set([...listed.keys(), ...view.listing.unreadable]),
    {budget: run.historyBudget, clock},
  )
  const unrecorded = recordHistoryStops(state.dir, options.org, ends, clock.now())
  if (unrecorded) run.warn(unrecorded)
  const lines = [...read.lines, ...ends]
  const intervals = ends.length === 0 ? recorded : intervalsOf(lines)
  const vms: CostVm[] = []
  const excluded: CostExcluded[] = []
  const counted: Interval[] = []
  for (const interval of intervals.values()) {
    if (!inRange(interval) || (options.fleet !== null && interval.fleet !== options.fleet)) continue
    const ms = billedWithin(interval, options.from, to, now)
    const vm = listed.get(interval.uid)
    if (interval.end === null && vm !== undefined && billingUncertain(vm))
      excluded.push(excludedOf(interval, vm, now, 'unknown-billing', UNKNOWN_END))
    else if (interval.price_per_hour === null) excluded.push(excludedOf(interval, vm, now, 'no-price', 'the API gave no price for it'))
    else {
      vms.push(costVm(interval, ms))
      counted.push(interval)
    }
  }

  // Listed, unknown whether it bills, and never seen billing: its open duration runs from its creation.
  for (const vm of view.vms) {
    // Created after the range ended: nothing to do with it.
    const created = createdAt(vm)
    const unknown = billingUncertain(vm) && (created === null || created < to)
    if (unknown && !intervals.has(vm.uid) && (options.fleet === null || vm.fleet === options.fleet)) excluded.push(unknownListed(vm, now))
  }

  vms.sort((a, b) => a.start.localeCompare(b.start))
  const days = daysOf(counted, options.from, to, now)
  const ledgerSince = read.since
  const incomplete = incompleteness(options.from, ledgerSince, read.prunedThrough)
  return {
    basis: COST_BASIS,
    complete: incomplete === null,
    days,
    estimate: true,
    excluded,
    fleet: options.fleet,
    from: new Date(options.from).toISOString(),
    group_by: options.by,
    groups: options.by === 'day' ? days.filter((day) => day.vms > 0) : groupsOf(vms, options.by),
    incomplete_reason: incomplete,
    ledger_since: ledgerSince === null ? null : new Date(ledgerSince).toISOString(),
    org: options.org,
    reconcile: options.checkCredits
      ? await checkAgainstCredits(
          client,
          store,
          lines,
          intervals,
          {endsNow: options.to === null || options.to >= now, excluded: new Set(excluded.map((vm) => vm.uid)), from: options.from, to},
          run.warn,
          clock,
        )
      : null,
    to: new Date(to).toISOString(),
    total_seconds: Math.round(vms.reduce((sum, vm) => sum + vm.seconds, 0)),
    total_usd: roundUsd(vms.reduce((sum, vm) => sum + vm.estimated_usd, 0)),
    vms,
  }
}

function costVm(interval: Interval, ms: number): CostVm {
  const price = interval.price_per_hour as number
  return {
    bounded: interval.endSource === 'last-seen',
    end: interval.end === null ? null : new Date(interval.end).toISOString(),
    end_source: interval.endSource ?? 'open',
    estimated_usd: roundUsd((ms / 3_600_000) * price),
    fleet: interval.fleet,
    found_gone_at: interval.foundGoneAt === null ? null : new Date(interval.foundGoneAt).toISOString(),
    gpu_count: interval.gpu_count,
    gpu_model: interval.gpu_model,
    name: interval.name,
    owner: interval.owner,
    price_per_hour: price,
    resource: interval.resource,
    seconds: Math.round(ms / 100) / 10,
    start: new Date(interval.start).toISOString(),
    start_source: interval.startSource,
    uid: interval.uid,
  }
}

function excludedOf(interval: Interval, vm: KnownVm | undefined, now: number, kind: CostExcluded['kind'], reason: string): CostExcluded {
  return {
    fleet: interval.fleet,
    kind,
    name: interval.name,
    open_seconds: Math.round(((interval.end ?? now) - interval.start) / 1000),
    reason,
    since: new Date(interval.start).toISOString(),
    status: vm?.status ?? null,
    uid: interval.uid,
  }
}

function unknownListed(vm: KnownVm, now: number): CostExcluded {
  const created = createdAt(vm)
  return {
    fleet: vm.fleet,
    kind: 'unknown-billing',
    name: vm.name,
    open_seconds: ageSeconds(vm, now),
    reason: `${UNKNOWN_END}; never seen billing`,
    since: created === null ? null : new Date(created).toISOString(),
    status: vm.status,
    uid: vm.uid,
  }
}

/** Every UTC day of the range, in order, with what the counted intervals billed on it. */
function daysOf(intervals: Interval[], from: number, to: number, now: number): CostGroup[] {
  const days = new Map<string, CostGroup>()
  for (let day = Math.floor(from / 86_400_000) * 86_400_000; day < to; day += 86_400_000) {
    const key = new Date(day).toISOString().slice(0, 10)
    days.set(key, {estimated_usd: 0, key, seconds: 0, vms: 0})
  }

  for (const interval of intervals) {
    for (const [key, ms] of billedByDay(interval, from, to, now)) {
      const day = days.get(key)
      if (!day) continue
      day.estimated_usd += (ms / 3_600_000) * (interval.price_per_hour as number)
      day.seconds += ms / 1000
      day.vms++
    }
  }

  return [...days.values()].map((day) => ({...day, estimated_usd: roundUsd(day.estimated_usd), seconds: Math.round(day.seconds)}))
}

function groupsOf(vms: CostVm[], by: Exclude<CostGrouping, 'day'>): CostGroup[] {
  const groups = new Map<string | null, CostGroup>()
  for (const vm of vms) {
    const key = by === 'fleet' ? vm.fleet : by === 'resource' ? vm.resource : vm.uid
    const group = groups.get(key) ?? {estimated_usd: 0, key, seconds: 0, vms: 0}
    group.estimated_usd += vm.estimated_usd
    group.seconds += vm.seconds
    group.vms++
    groups.set(key, group)
  }

  return [...groups.values()]
    .map((group) => ({...group, estimated_usd: roundUsd(group.estimated_usd), seconds: Math.round(group.seconds)}))
    .sort((a, b) => b.estimated_usd - a.estimated_usd)
}

/** Why a report from `from` cannot be complete, or null when it can. */
function incompleteness(from: number, ledgerSince: number | null, prunedThrough: string | null): string | null {
  if (prunedThrough !== null && from < monthEnd(prunedThrough))
    return `the ledger months through ${prunedThrough} were deleted (older than TARGON_LEDGER_DAYS): spend before ${new Date(monthEnd(prunedThrough)).toISOString().slice(0, 10)} is missing`
  if (ledgerSince === null) return 'the ledger is empty: VMs gone before this run are not known'
  if (from < ledgerSince)
    return `the ledger begins ${new Date(ledgerSince).toISOString()}: VMs gone before then are not counted (those still running then are, from their creation)`
  return null
}
