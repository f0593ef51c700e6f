/**
 * The org's credits, what burns them now, and how long they last; and the one check of the estimates against what
 * Targon charged: the drop in credits between two readings next to the estimate of every VM the ledger knows over
 * the same interval. Each reading of the credits is kept in the ledger, so that a later run can compare.
 */
import type {CreditsResult, Reconcile} from '../contract.js'
import {roundUsd} from '../fleet/cost.js'
import {type OwnerScope} from '../fleet/owners.js'
import {snapshot, vmPrice} from '../fleet/workloads.js'
import {TargonError} from '../core/errors.js'
import {type Interval, billedWithin} from '../ledger/intervals.js'
import type {LedgerLine} from '../ledger/lines.js'
import {LedgerStore} from '../ledger/store.js'
import type {LocalState} from '../state/local-state.js'
import type {TargonClient} from '../targon/client.js'

/** A drop in credits within this share of the estimate (or within a cent) counts as matching it. */
export const RECONCILE_TOLERANCE = {absoluteUsd: 0.01, share: 0.05}

/** What a comparison of credits with estimates can never see. */
const ALWAYS_UNSEEN = [
  'other workload types (rentals, sandboxes, storage) draw on the same credits and are not listed as VMs',
  'VMs created and deleted between two listings made from this config directory were never seen',
  'top-ups, refunds and overage between the two readings',
]

export interface CreditsOptions {
  org: string
  owners: OwnerScope
  /** --min-runway in ms, or null. */
  minRunwayMs: number | null
  warn: (message: string) => void
}

export async function runCredits(client: TargonClient, state: LocalState, options: CreditsOptions): Promise<CreditsResult> {
  const view = await snapshot(client, options.org, state, options.owners.owner !== null)
  for (const problem of view.problems) options.warn(problem)
  const reading = await readCredits(client, new LedgerStore(state.dir, options.org), options.warn)
  const billing = view.vms.filter((vm) => !vm.gone && vm.billing !== false)
  const priced = billing.filter((vm) => vmPrice(vm) !== null)
  const burn = sumPrices(priced)
  // Without an owner set, nothing tells people apart: the share is every VM of this tool in the org.
  const mine = priced.filter((vm) => (options.owners.owner === null ? vm.owned : vm.owner === options.owners.owner))
  const runwayHours = burn > 0 ? Math.max(0, reading.credits) / burn : null
  const short = options.minRunwayMs !== null && runwayHours !== null && runwayHours * 3_600_000 < options.minRunwayMs
  return {
    as_of: new Date(reading.at).toISOString(),
    billing_vms: billing.length,
    burn_usd_per_hour: burn,
    credits: reading.credits,
    currency: reading.currency,
    mine: {billing_vms: mine.length, burn_usd_per_hour: sumPrices(mine), owner: options.owners.owner},
    min_runway_hours: options.minRunwayMs === null ? null : options.minRunwayMs / 3_600_000,
    org: options.org,
    runway_ends_at: runwayHours === null ? null : new Date(reading.at + runwayHours * 3_600_000).toISOString(),
    runway_hours: runwayHours === null ? null : Math.round(runwayHours * 100) / 100,
    short,
    invalid_items: view.invalid.length,
    uncertain_vms: billing.filter((vm) => vm.billing === null || vm.billingAssumed).map((vm) => vm.uid),
    unpriced_vms: billing.filter((vm) => vmPrice(vm) === null).map((vm) => vm.uid),
  }
}

function sumPrices(vms: Parameters<typeof vmPrice>[0][]): number {
  return roundUsd(vms.reduce((sum, vm) => sum + (vmPrice(vm) ?? 0), 0))
}

interface Reading {
  at: number
  credits: number
  currency: string | null
}

/** Reads the credits now and keeps the reading in the ledger. */
async function readCredits(client: TargonClient, store: LedgerStore, warn: (message: string) => void): Promise<Reading> {
  let answer
  try {
    answer = await client.getCredits(store.org)
  } catch (error) {
    // Refused (401, 403) or not there (404): the key may lack the wallet's permission, or the API moved it.
    throw error instanceof TargonError && (error.code === 'AUTH' || error.code === 'NOT_FOUND')
      ? error.with({hint: `the org's credits could not be read: check that the API key may read the org's wallet`})
      : error
  }

  const reading = {at: Date.now(), credits: answer.credits, currency: answer.currency ?? null}
  const unrecorded = store.append([
    {at: new Date(reading.at).toISOString(), credits: reading.credits, currency: reading.currency, kind: 'credits'},
  ])
  if (unrecorded) warn(unrecorded)
  return reading
}

/**
 * cost --reconcile: reads the credits now and compares the drop since the earliest reading kept in the range with the
 * estimate of every VM the ledger knows (any fleet, any owner) over the same interval.
 */
export async function reconcile(
  client: TargonClient,
  store: LedgerStore,
  lines: readonly LedgerLine[],
  intervals: ReadonlyMap<string, Interval>,
  from: number,
  warn: (message: string) => void,
): Promise<Reconcile> {
  const none = {
    credits_drop_usd: null,
    credits_from: null,
    credits_to: null,
    difference_usd: null,
    estimated_usd: null,
    from: null,
    to: null,
  }
  let now: Reading
  try {
    now = await readCredits(client, store, warn)
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    warn(`the credits could not be read: ${error.message}`)
    return {...none, unseen: ALWAYS_UNSEEN, verdict: 'unreadable'}
  }

  const earlier = lines
    .filter((line): line is Extract<LedgerLine, {kind: 'credits'}> => line.kind === 'credits')
    .map((line) => ({at: Date.parse(line.at), credits: line.credits}))
    .filter((line) => line.at >= from && line.at < now.at)
    .sort((a, b) => a.at - b.at)[0]
  if (!earlier) return {...none, credits_to: now.credits, to: new Date(now.at).toISOString(), unseen: ALWAYS_UNSEEN, verdict: 'one-reading'}

  const overlapping = [...intervals.values()].filter((interval) => billedWithin(interval, earlier.at, now.at, now.at) > 0)
  const unpriced = overlapping.filter((interval) => interval.price_per_hour === null).length
  const bounded = overlapping.filter((interval) => interval.endHow === 'last-seen').length
  const estimate = roundUsd(
    overlapping.reduce(
      (sum, interval) => sum + (billedWithin(interval, earlier.at, now.at, now.at) / 3_600_000) * (interval.price_per_hour ?? 0),
      0,
    ),
  )
  const drop = roundUsd(earlier.credits - now.credits)
  const difference = roundUsd(drop - estimate)
  const within = Math.abs(difference) <= Math.max(RECONCILE_TOLERANCE.absoluteUsd, RECONCILE_TOLERANCE.share * Math.max(drop, estimate))
  const verdict = drop < 0 ? 'credits-rose' : drop === 0 && estimate > 0 ? 'credits-unchanged' : within ? 'matches' : 'differs'
  return {
    credits_drop_usd: drop,
    credits_from: earlier.credits,
    credits_to: now.credits,
    difference_usd: difference,
    estimated_usd: estimate,
    from: new Date(earlier.at).toISOString(),
    to: new Date(now.at).toISOString(),
    unseen: [
      ...ALWAYS_UNSEEN,
      ...(unpriced > 0 ? [`${unpriced} VM(s) without a price, counted as 0`] : []),
      ...(bounded > 0 ? [`${bounded} VM(s) whose end is only their last sighting (a lower bound)`] : []),
    ],
    verdict,
  }
}
