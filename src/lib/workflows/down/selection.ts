/**
 * What `targon down` (and the sweep, through it) selects: the VMs a selection names or its bulk selectors take, and
 * the local limits (--ttl, --max-cost) a VM has reached. Pure: the listing and the time are given.
 */
import {TargonError} from '../../core/errors.js'
import {budgetLeft, estimatedCost} from '../../domain/fleet/estimates.js'
import {type KnownVm, resolveVm} from '../../domain/fleet/fleet-read.js'
import {type OwnerScope, findForOwner, scoped} from '../../domain/fleet/owners.js'
import type {DownResult} from './schema.js'
import {limitsOf} from '../../domain/fleet/limits.js'

export type DownSelection = DownResult['selection']

/**
 * A selection made by a workflow rather than by flags (the sweep, dstack scale, run --down): nothing selected but
 * what `picks` says, under the owner rules of `scope`.
 */
export function selectionOf(scope: OwnerScope, picks: Partial<DownSelection>): DownSelection {
  return {
    all: false,
    any_origin: false,
    any_owner: scope.anyOwner,
    expired: false,
    fleet: null,
    idle: false,
    idle_limit_seconds: null,
    jobs_done: false,
    older_than_seconds: null,
    over_cost_usd: null,
    owner: scope.owner,
    targets: [],
    ...picks,
  }
}

/** The owner rules of a selection: the inverse of selectionOf's. */
export function scopeOf(selection: Pick<DownSelection, 'any_owner' | 'owner'>): OwnerScope {
  return {anyOwner: selection.any_owner, owner: selection.owner}
}

/**
 * Picks the VMs a selection names. Explicit targets are always allowed, and with them --fleet only says which fleet
 * their labels belong to; without targets, bulk selectors take only this tool's VMs, and never tombstones. Targets
 * the listing does not show come back as `unlisted`.
 */
export function chooseTargets(
  vms: KnownVm[],
  selection: DownSelection & {tombstones?: boolean},
  labelFleet: string,
  now: number,
): {chosen: KnownVm[]; unlisted: string[]} {
  const chosen = new Map<string, KnownVm>()
  const unlisted: string[] = []
  const scope = scopeOf(selection)
  for (const target of selection.targets) {
    const matches = findForOwner(vms, scope, target, (among) => resolveVm(among, target, selection.fleet ?? labelFleet))
    if (matches.length > 1 && matches.some((vm) => vm.uid !== target)) {
      throw new TargonError('NAME_CONFLICT', `${matches.length} VMs are named ${target}: ${matches.map((vm) => vm.uid).join(', ')}`, {
        hint: 'name them by uid',
      })
    }

    if (matches.length === 0) unlisted.push(target)
    for (const vm of matches) chosen.set(vm.uid, vm)
  }

  if (isBulk(selection)) {
    for (const vm of scoped(vms, scope).inScope) {
      // tombstones: only the deleted VMs the selectors would take, to count them.
      if (vm.gone !== (selection.tombstones ?? false)) continue
      if (!selection.any_origin && !vm.owned) continue
      if (selection.fleet !== null && vm.fleet !== selection.fleet) continue
      if (selection.older_than_seconds !== null && !olderThan(vm, selection.older_than_seconds, now)) continue
      if (selection.expired && !expired(vm, now)) continue
      if (selection.over_cost_usd !== null && !((estimatedCost(vm, now) ?? 0) > selection.over_cost_usd)) continue
      chosen.set(vm.uid, vm)
    }
  }

  return {chosen: [...chosen.values()], unlisted}
}

/** Whether VMs are selected by --all, --fleet, --older-than, --over-cost, --expired, --idle or --jobs-done rather than named. */
export function isBulk(selection: DownSelection): boolean {
  return (
    selection.targets.length === 0 &&
    (selection.all ||
      selection.fleet !== null ||
      selection.expired ||
      selection.older_than_seconds !== null ||
      selection.over_cost_usd !== null ||
      selection.idle ||
      selection.jobs_done)
  )
}

function olderThan(vm: KnownVm, seconds: number, now: number): boolean {
  const created = Date.parse(vm.workload.created_at ?? vm.record?.created_at ?? '')
  return !Number.isNaN(created) && now - created >= seconds * 1000
}

/** Its --ttl ran out, or its --max-cost budget is spent by the estimate (price × age): the record's, or the VM's stricter ones. */
function expired(vm: KnownVm, now: number): boolean {
  return limitReached(vm, now) !== null
}

/** Which limit a VM has reached (fleet/limits.ts): its --ttl, else its --max-cost budget (by the estimate); null for neither. */
export function limitReached(vm: KnownVm, now: number): 'max-cost' | 'ttl' | null {
  const expires = Date.parse(limitsOf(vm).ttl_expires_at ?? '')
  if (!Number.isNaN(expires) && expires <= now) return 'ttl'
  const left = budgetLeft(vm, now)
  return left !== null && left <= 0 ? 'max-cost' : null
}
