/** Did-you-mean for VM names, and the price-and-owner part of a notification's text. */
import {describe, expect, it} from 'vitest'

import {closest, editDistance} from '../../src/lib/core/similar.js'
import {suggestVmName} from '../../src/lib/domain/fleet/suggest.js'
import {priceAndOwners} from '../../src/lib/adapters/notify/notify.js'

describe('closest', () => {
  it('takes the nearest word within a third of the typed length, never the typed word itself', () => {
    expect(editDistance('workr1', 'worker1')).toBe(1)
    expect(closest('workr1', ['worker2', 'worker1', 'tcli-train-worker1'])).toBe('worker1')
    expect(closest('worker1', ['worker1'])).toBeUndefined()
    expect(closest('abc', ['xyz'])).toBeUndefined()
    expect(closest('gpu-box-7', ['gpu-box-1', 'gpu-box-2'])).toBe('gpu-box-1')
  })
})

describe('suggestVmName', () => {
  const vm = (name: string, owner: string | null = null, gone = false) => ({gone, name, owner})
  const everyone = {anyOwner: false, owner: null}

  it('offers labels within the fleet and full names, but no tombstone and no other owner', () => {
    const vms = [vm('tcli-train-worker1'), vm('tcli-train-zeta9', null, true), vm('tcli-default-alpha', 'bob')]
    expect(suggestVmName('workr1', vms, 'train', everyone)).toBe('worker1')
    expect(suggestVmName('zeta8', vms, 'train', everyone)).toBeUndefined()
    expect(suggestVmName('tcli-default-alpa', vms, 'train', everyone)).toBe('tcli-default-alpha')
    expect(suggestVmName('tcli-default-alpa', vms, 'train', {anyOwner: false, owner: 'alice'})).toBeUndefined()
    expect(suggestVmName('tcli-default-alpa', vms, 'train', {anyOwner: true, owner: 'alice'})).toBe('tcli-default-alpha')
  })
})

describe('priceAndOwners', () => {
  it('sums the hourly prices, says which are unknown, and names the owners', () => {
    expect(
      priceAndOwners([
        {owner: 'alice', price_per_hour: 1.69},
        {owner: 'alice', price_per_hour: 1.69},
      ]),
    ).toBe('3.38 USD/h; owner alice')
    expect(priceAndOwners([{owner: null, price_per_hour: 2}])).toBe('2.00 USD/h; no owner')
    expect(
      priceAndOwners([
        {owner: 'alice', price_per_hour: 1},
        {owner: null, price_per_hour: null},
      ]),
    ).toBe('1.00 USD/h and 1 unpriced; owner alice and none')
    expect(
      priceAndOwners([
        {owner: 'alice', price_per_hour: 1},
        {owner: 'bob', price_per_hour: 1},
      ]),
    ).toBe('2.00 USD/h; owners alice, bob')
  })
})
