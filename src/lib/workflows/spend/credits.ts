/**
 * `targon credits` without the rendering: the org's credits, what burns them now (every VM known to bill in the org,
 * from the listing), what may burn them too (records whose billing is unknown), and how long they last.
 *
 * The alarm (--min-runway) rings for what is known to bill. It rings for the known and the possible burn together as
 * well, unless a measured burn (the drop between two credit readings of this directory, MEASURE_MIN_MS or more apart
 * within MEASURE_MAX_MS) shows that the records of unknown billing do not bill: measured nearer the known burn than
 * the known plus the possible one. Only a conclusive measurement may show that: one that sees at least what is known
 * to bill (credits debited in batches, or never, fall slower than that and prove nothing).
 */
import type {CreditsResult} from './schema.js'
import {roundUsd} from '../../domain/fleet/estimates.js'
import {type OwnerScope} from '../../domain/fleet/owners.js'
import {type KnownVm, billingUncertain, readFleet, vmPrice} from '../../domain/fleet/fleet-read.js'
import {intervalsOf} from '../../domain/ledger/intervals.js'
import {LedgerStore} from '../../domain/ledger/store.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type Reading, readCredits} from './credits-check.js'
import type {LedgerLine} from '../../domain/ledger/lines.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import type {ListingRun} from '../../domain/fleet/run.js'

/** Two readings closer than this are too close to measure a burn (credits may be debited in steps). */
export const MEASURE_MIN_MS = 15 * 60_000
/** A reading older than this says little about what burns now. */
export const MEASURE_MAX_MS = 6 * 3_600_000
/** Credits falling faster than this share above the known burn (or a cent an hour) mean something unknown bills. */
const FASTER = {absoluteUsd: 0.01, share: 0.05}
/** A measurement sees what is known to bill when the credits fell by at least this share of it (less a cent an hour). */
const SEES_KNOWN = {absoluteUsd: 0.01, share: 0.95}

/**
 * Whether a measured burn says anything of the records of unknown billing: only when it sees at least what is known
 * to bill. Slower (equal readings, a wallet debited in batches) it proves nothing. null: nothing measured.
 */
export function measurementConclusive(measuredUsdPerHour: number | null, knownUsdPerHour: number): boolean | null {
  if (measuredUsdPerHour === null) return null
  return measuredUsdPerHour >= knownUsdPerHour * SEES_KNOWN.share - SEES_KNOWN.absoluteUsd
}

export interface CreditsOptions {
  org: string
  owners: OwnerScope
  /** --min-runway in ms, or null. */
  minRunwayMs: number | null
}

export async function runCredits(
  run: ListingRun,
  client: TargonClient,
  state: LocalState,
  options: CreditsOptions,
): Promise<CreditsResult> {
  const {clock} = run
  const view = await readFleet(client, options.org, state, {
    clock,
    historyBudget: run.historyBudget,
    readOwners: options.owners.owner !== null,
  })
  for (const problem of view.problems) run.warn(problem)
  recordFleetRead(state, options.org, view, clock)
  const store = new LedgerStore(state.dir, options.org)
  const reading = await readCredits(client, store, run.warn, clock)
  const lines = store.readLatest().lines
  // An uncertain record whose billing the ledger saw end (a deletion seen, its tombstone) is not burning credits.
  const ended = intervalsOf(lines)
  const listed = view.vms.filter((vm) => !vm.gone && vm.billing !== false)
  const billing = listed.filter((vm) => !billingUncertain(vm))
  const possible = listed.filter((vm) => billingUncertain(vm) && (ended.get(vm.uid)?.end ?? null) === null)
  const priced = billing.filter((vm) => vmPrice(vm) !== null)
  const burn = sumPrices(priced)
  const possibleBurn = sumPrices(possible)
  // Without an owner set, nothing tells people apart: the share is every VM of this tool in the org.
  const mine = priced.filter((vm) => (options.owners.owner === null ? vm.owned : vm.owner === options.owners.owner))
  const runwayHours = hoursOf(reading.credits, burn)
  const unpriced = billing.filter((vm) => vmPrice(vm) === null)
  if (runwayHours === null && unpriced.length > 0)
    run.warn(`the runway is unknown: ${unpriced.length} billing VM(s) have no price in the listing`)
  const measured = measuredBurn(lines, reading)
  const fasterThanKnown = measured !== null && measured.usdPerHour > burn * (1 + FASTER.share) + FASTER.absoluteUsd
  if (measured !== null && fasterThanKnown)
    run.warn(
      `the credits fell at ${measured.usdPerHour} USD/h over the last ${Math.round(measured.overMs / 60_000)} min, faster than the ${burn} USD/h known to bill: something not known to bill does (${possible.length} record(s) of unknown billing, or other workload types)`,
    )
  // The unknown records are cleared by a conclusive measurement nearer the known burn than the known plus the possible one.
  const conclusive = measurementConclusive(measured?.usdPerHour ?? null, burn)
  const unknownCleared = measured !== null && conclusive === true && measured.usdPerHour < burn + possibleBurn / 2
  if (measured !== null && !conclusive && possibleBurn > 0)
    run.warn(
      `the measured burn (${measured.usdPerHour} USD/h) is below the ${burn} USD/h known to bill, so it proves nothing (credits debited in batches?): the records of unknown billing still count for the alarm`,
    )
  const withPossible = possibleBurn > 0 && !unknownCleared ? hoursOf(reading.credits, burn + possibleBurn) : null
  const shorter = (hours: number | null) => options.minRunwayMs !== null && hours !== null && hours * 3_600_000 < options.minRunwayMs
  const short = shorter(runwayHours) || shorter(withPossible)
  return {
    as_of: new Date(reading.at).toISOString(),
    billing_vms: billing.length,
    burn_usd_per_hour: burn,
    measured_burn_usd_per_hour: measured?.usdPerHour ?? null,
    measured_burn_conclusive: conclusive,
    measured_since: measured === null ? null : new Date(reading.at - measured.overMs).toISOString(),
    possible_burn_usd_per_hour: possibleBurn,
    possible_runway_hours: withPossible === null ? null : Math.round(withPossible * 100) / 100,
    possible_vms: possible.map(vmView),
    credits: reading.credits,
    currency: reading.currency,
    invalid_items: view.invalid.length,
    mine: {billing_vms: mine.length, burn_usd_per_hour: sumPrices(mine), owner: options.owners.owner},
    min_runway_hours: options.minRunwayMs === null ? null : options.minRunwayMs / 3_600_000,
    org: options.org,
    runway_ends_at: runwayHours === null ? null : new Date(reading.at + runwayHours * 3_600_000).toISOString(),
    runway_hours: runwayHours === null ? null : Math.round(runwayHours * 100) / 100,
    short,
    uncertain_vms: possible.map((vm) => vm.uid),
    unpriced_vms: unpriced.map((vm) => vm.uid),
    vms: billing.map(vmView),
  }
}

function vmView(vm: KnownVm) {
  return {name: vm.name, owner: vm.owner ?? null, price_per_hour: vmPrice(vm), uid: vm.uid}
}

function hoursOf(credits: number, usdPerHour: number): number | null {
  return usdPerHour > 0 ? Math.max(0, credits) / usdPerHour : null
}

/**
 * The burn the credits show: their drop from the oldest reading of this directory within MEASURE_MAX_MS to the one
 * just made, when at least MEASURE_MIN_MS apart; null without such a reading, or when the credits rose (a top-up).
 */
export function measuredBurn(lines: readonly LedgerLine[], now: Reading): {usdPerHour: number; overMs: number} | null {
  const earliest = lines
    .flatMap((line) => (line.kind === 'credits' ? [{at: Date.parse(line.at), credits: line.credits}] : []))
    .filter((reading) => now.at - reading.at >= MEASURE_MIN_MS && now.at - reading.at <= MEASURE_MAX_MS)
    .sort((a, b) => a.at - b.at)[0]
  if (!earliest || earliest.credits < now.credits) return null
  const overMs = now.at - earliest.at
  return {overMs, usdPerHour: roundUsd(((earliest.credits - now.credits) / overMs) * 3_600_000)}
}

function sumPrices(vms: KnownVm[]): number {
  return roundUsd(vms.reduce((sum, vm) => sum + (vmPrice(vm) ?? 0), 0))
}
