/**
 * What the whole org bills per hour, whatever a status run selects: every VM known to bill, of every owner and of
 * every origin, grouped by whose it is. It is status's last line, so that nobody reads "No VMs" while VMs bill.
 * The total is the burn rate `credits` shows: known billing and known prices only; the rest is counted and said.
 */
import type {OrgBilling, OrgBillingGroup} from './schema.js'
import {roundUsd} from '../../domain/fleet/estimates.js'
import {type KnownVm, billingUncertain, vmPrice} from '../../domain/fleet/fleet-read.js'
import {countOf, usd} from '../../core/output.js'

/** `invalidCount`: listed items that failed the checks of the API answer; they may bill, as records of unknown billing. */
export function orgBilling(vms: readonly KnownVm[], invalidCount: number): OrgBilling {
  const live = vms.filter((vm) => !vm.gone)
  const groups = new Map<string, OrgBillingGroup>()
  for (const vm of live.filter((each) => each.billing === true)) {
    const {group, owner} = groupOf(vm)
    const key = `${group}:${owner ?? ''}`
    const entry = groups.get(key) ?? {billing_count: 0, group, owner, price_per_hour: 0, unpriced_count: 0}
    const price = vmPrice(vm)
    entry.billing_count += 1
    if (price === null) entry.unpriced_count += 1
    else entry.price_per_hour = roundUsd(entry.price_per_hour + price)
    groups.set(key, entry)
  }

  const byOwner = [...groups.values()].sort(
    (a, b) => GROUP_ORDER.indexOf(a.group) - GROUP_ORDER.indexOf(b.group) || (a.owner ?? '').localeCompare(b.owner ?? ''),
  )
  const sum = (pick: (group: OrgBillingGroup) => number) => byOwner.reduce((total, group) => total + pick(group), 0)
  return {
    billing_count: sum((group) => group.billing_count),
    by_owner: byOwner,
    price_per_hour: roundUsd(sum((group) => group.price_per_hour)),
    unknown_billing_count: live.filter(billingUncertain).length + invalidCount,
    unpriced_count: sum((group) => group.unpriced_count),
  }
}

/** Named owners first (by name), then this tool's VMs without an owner, those whose owner is unknown, other tools'. */
const GROUP_ORDER: readonly OrgBillingGroup['group'][] = ['owner', 'no-owner', 'owner-unknown', 'other-origin']

function groupOf(vm: KnownVm): Pick<OrgBillingGroup, 'group' | 'owner'> {
  if (!vm.owned) return {group: 'other-origin', owner: null}
  if (typeof vm.owner === 'string') return {group: 'owner', owner: vm.owner}
  return {group: vm.owner === null ? 'no-owner' : 'owner-unknown', owner: null}
}

/** A group as the line names it: an owner by name (an owner's name has no space, so none reads as another group). */
function groupName(group: OrgBillingGroup): string {
  if (group.group === 'owner') return group.owner ?? '?'
  return {'no-owner': 'no owner', 'other-origin': 'other tools', 'owner-unknown': 'owner unknown'}[group.group]
}

/** "Org acme bills at least 3.97 USD/h: alice 3.38, bob 0.59 (1 VM of unknown price, not in the sum)" */
export function orgBillingLine(org: string, billing: OrgBilling): string {
  const notes = [
    ...(billing.unpriced_count > 0 ? [`${countOf(billing.unpriced_count, 'VM')} of unknown price, not in the sum`] : []),
    ...(billing.unknown_billing_count > 0 ? [`${countOf(billing.unknown_billing_count, 'record')} of unknown billing`] : []),
  ]
  // A group whose every VM is of unknown price has no figure to show.
  const groups = billing.by_owner.map(
    (group) => `${groupName(group)} ${group.unpriced_count === group.billing_count ? '?' : usd(group.price_per_hour)}`,
  )
  const what =
    billing.billing_count === 0
      ? `0.00 USD/h: no VM ${billing.unknown_billing_count > 0 ? 'known to bill' : 'bills'}`
      : `${billing.unpriced_count > 0 ? 'at least ' : ''}${usd(billing.price_per_hour)} USD/h: ${groups.join(', ')}`
  return `Org ${org} bills ${what}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`
}
