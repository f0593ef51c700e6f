/**
 * `targon credits` without the rendering: the org's credits, what burns them now (every VM billing in the org, from
 * the listing), and how long they last.
 */
import type {CreditsResult} from '../contract.js'
import {roundUsd} from '../fleet/cost.js'
import {type OwnerScope} from '../fleet/owners.js'
import {type KnownVm, billingUncertain, snapshot, vmPrice} from '../fleet/workloads.js'
import {intervalsOf} from '../ledger/intervals.js'
import {LedgerStore} from '../ledger/store.js'
import type {LocalState} from '../state/local-state.js'
import type {TargonClient} from '../targon/client.js'
import {readCredits} from './reconcile.js'

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
  const store = new LedgerStore(state.dir, options.org)
  const reading = await readCredits(client, store, options.warn)
  // An uncertain record whose billing the ledger saw end (a deletion seen, its tombstone) is not burning credits.
  const ended = intervalsOf(store.readLatest().lines)
  const billing = view.vms.filter(
    (vm) => !vm.gone && vm.billing !== false && !(billingUncertain(vm) && (ended.get(vm.uid)?.end ?? null) !== null),
  )
  const priced = billing.filter((vm) => vmPrice(vm) !== null)
  const burn = sumPrices(priced)
  // Without an owner set, nothing tells people apart: the share is every VM of this tool in the org.
  const mine = priced.filter((vm) => (options.owners.owner === null ? vm.owned : vm.owner === options.owners.owner))
  const runwayHours = burn > 0 ? Math.max(0, reading.credits) / burn : null
  const unpriced = billing.filter((vm) => vmPrice(vm) === null)
  if (runwayHours === null && unpriced.length > 0)
    options.warn(`the runway is unknown: ${unpriced.length} billing VM(s) have no price in the listing`)
  const short = options.minRunwayMs !== null && runwayHours !== null && runwayHours * 3_600_000 < options.minRunwayMs
  return {
    as_of: new Date(reading.at).toISOString(),
    billing_vms: billing.length,
    burn_usd_per_hour: burn,
    credits: reading.credits,
    currency: reading.currency,
    invalid_items: view.invalid.length,
    mine: {billing_vms: mine.length, burn_usd_per_hour: sumPrices(mine), owner: options.owners.owner},
    min_runway_hours: options.minRunwayMs === null ? null : options.minRunwayMs / 3_600_000,
    org: options.org,
    runway_ends_at: runwayHours === null ? null : new Date(reading.at + runwayHours * 3_600_000).toISOString(),
    runway_hours: runwayHours === null ? null : Math.round(runwayHours * 100) / 100,
    short,
    uncertain_vms: billing.filter(billingUncertain).map((vm) => vm.uid),
    unpriced_vms: unpriced.map((vm) => vm.uid),
    vms: billing.map((vm) => ({name: vm.name, owner: vm.owner ?? null, price_per_hour: vmPrice(vm), uid: vm.uid})),
  }
}

function sumPrices(vms: KnownVm[]): number {
  return roundUsd(vms.reduce((sum, vm) => sum + (vmPrice(vm) ?? 0), 0))
}
