/**
 * Cost estimates: Targon reports no per-VM charges, so a VM's cost is estimated as its hourly price times its
 * age (from the API's creation time). Used by status (cost and budget left) and down (--over-cost, budgets).
 */
import {type KnownVm, vmPrice} from './fleet-read.js'
import {limitsOf} from './limits.js'

/** The API's creation time in epoch ms; null when it does not say (or says something that is not a time). */
export function createdAt(vm: KnownVm): number | null {
  const created = vm.workload.created_at ? Date.parse(vm.workload.created_at) : Number.NaN
  return Number.isNaN(created) ? null : created
}

/** Age in whole seconds from the API's creation time; null when it does not say. */
export function ageSeconds(vm: KnownVm, now: number): number | null {
  const created = createdAt(vm)
  return created === null ? null : Math.max(0, Math.round((now - created) / 1000))
}

/** price × age in USD, rounded to 1/100 of a cent; 0 for what does not bill; null when price or age is unknown or it is gone. */
export function estimatedCost(vm: KnownVm, now: number): number | null {
  const age = ageSeconds(vm, now)
  const price = vmPrice(vm)
  if (age === null || price === null || vm.gone) return null
  return vm.billing === false ? 0 : roundUsd((age / 3600) * price)
}

/** The budget (up --max-cost: the record's, or the lower one the VM carries) minus the estimate; null without a budget or an estimate. */
export function budgetLeft(vm: KnownVm, now: number): number | null {
  const budget = limitsOf(vm).max_cost_usd
  const cost = estimatedCost(vm, now)
  return budget === null || cost === null ? null : roundUsd(budget - cost)
}

export function roundUsd(value: number): number {
  return Math.round(value * 10_000) / 10_000
}
