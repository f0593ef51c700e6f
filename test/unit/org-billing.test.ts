/** What status's last line sums: every VM known to bill in the org, grouped by whose it is; the rest counted and said. */
import {describe, expect, it} from 'vitest'

import type {KnownVm} from '../../src/lib/domain/fleet/fleet-read.js'
import {orgBilling, orgBillingLine} from '../../src/lib/workflows/status/org-billing.js'

let next = 0
const vm = (fields: Partial<KnownVm> & {price?: number}): KnownVm => {
  const {price, ...rest} = fields
  next += 1
  return {
    billing: true,
    gone: false,
    owned: true,
    owner: null,
    uid: `wrk-${next}`,
    workload: {cost_per_hour: price},
    ...rest,
  } as KnownVm
}

describe('orgBilling', () => {
  it('groups by owner, then no owner, unknown owner and other tools; counts unpriced VMs and unknown billing apart', () => {
    const billing = orgBilling(
      [
        vm({owner: 'bob', price: 0.59}),
        vm({owner: 'alice', price: 1.69}),
        vm({owner: 'alice', price: 1.69}),
        vm({owned: false, owner: undefined, price: 2}),
        vm({owner: undefined, price: 1.1}),
        vm({owner: null}),
        // Neither a tombstone, nor a registered leftover, nor a record of unknown billing is in a sum.
        vm({billing: false, gone: true, owner: 'alice', price: 9}),
        vm({billing: false, owner: 'alice', price: 9}),
        vm({billing: null, owner: 'bob', price: 9}),
      ],
      2,
    )
    expect(billing).toEqual({
      billing_count: 6,
      by_owner: [
        {billing_count: 2, group: 'owner', owner: 'alice', price_per_hour: 3.38, unpriced_count: 0},
        {billing_count: 1, group: 'owner', owner: 'bob', price_per_hour: 0.59, unpriced_count: 0},
        {billing_count: 1, group: 'no-owner', owner: null, price_per_hour: 0, unpriced_count: 1},
        {billing_count: 1, group: 'owner-unknown', owner: null, price_per_hour: 1.1, unpriced_count: 0},
        {billing_count: 1, group: 'other-origin', owner: null, price_per_hour: 2, unpriced_count: 0},
      ],
      price_per_hour: 7.07,
      unknown_billing_count: 3,
      unpriced_count: 1,
    })
    expect(orgBillingLine('acme', billing)).toBe(
      'Org acme bills at least 7.07 USD/h: alice 3.38, bob 0.59, no owner ?, owner unknown 1.10, other tools 2.00 (1 VM of unknown price, not in the sum; 3 records of unknown billing)',
    )
  })

  it('says when nothing bills, and when nothing is known to', () => {
    expect(orgBillingLine('acme', orgBilling([], 0))).toBe('Org acme bills 0.00 USD/h: no VM bills')
    expect(orgBillingLine('acme', orgBilling([vm({billing: null, price: 1})], 0))).toBe(
      'Org acme bills 0.00 USD/h: no VM known to bill (1 record of unknown billing)',
    )
  })
})
