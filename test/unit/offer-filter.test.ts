import {describe, expect, it} from 'vitest'

import {RawOfferSchema} from '../../src/lib/adapters/targon/schemas.js'
import {chooseCandidates, matchingOffers, offersUnderCap, rentableOffers} from '../../src/lib/domain/capacity/candidates.js'
import {type OfferFilter, type OfferKind, filterOffers, isOfKind} from '../../src/lib/domain/offers/filter.js'
import {normalizeOffer, sortOffers} from '../../src/lib/domain/offers/offers.js'

/** One inventory: each offer differs from another in one criterion. */
const OFFERS = [
  {available: 2, cost_per_hour: 2.5, name: 'h100-1x', spec: {gpu_count: 1, gpu_model: 'NVIDIA-H100'}},
  {available: 1, cost_per_hour: 20, name: 'h100-8x', spec: {gpu_count: 8, gpu_model: 'NVIDIA-H100'}},
  {available: 0, cost_per_hour: 2.3, name: 'h100-1x-sold-out', spec: {gpu_count: 1, gpu_model: 'H100'}},
  {cost_per_hour: 3.1, name: 'h200-1x-unknown', spec: {gpu_count: 1, gpu_model: 'H200'}},
  {available: 3, cost_per_hour: 1.8, name: 'rtx6000b-1x', spec: {gpu_count: 1, gpu_model: 'RTX PRO 6000 Blackwell'}},
  {available: 5, cost_per_hour: 0.1 + 0.2, name: 'cpu-small', gpu: false},
  {available: 1, cost_per_hour: 4, name: 'v2-h200', gpu: true, spec: {gpu_type: 'H200'}},
].map((raw) => normalizeOffer(RawOfferSchema.parse(raw)))

const names = (offers: {resource: string}[]) => offers.map((offer) => offer.resource).sort()

describe('the offer filter', () => {
  it.each<[string, OfferFilter, string[]]>([
    [
      'nothing asked: every offer with capacity, unknown kept',
      {},
      ['cpu-small', 'h100-1x', 'h100-8x', 'h200-1x-unknown', 'rtx6000b-1x', 'v2-h200'],
    ],
    ['--all keeps sold-out offers', {includeSoldOut: true}, names(OFFERS)],
    ['a GPU model in any spelling', {gpu: 'h100'}, ['h100-1x', 'h100-8x']],
    ['a GPU model and sold-out ones', {gpu: 'NVIDIA-H100', includeSoldOut: true}, ['h100-1x', 'h100-1x-sold-out', 'h100-8x']],
    ['RTX PRO 6000 by its short name', {gpu: 'RTX-PRO-6000B'}, ['rtx6000b-1x']],
    ['a GPU model on offer in neither generation', {gpu: 'b300'}, []],
    ['at least 8 GPUs', {minGpus: 8}, ['h100-8x']],
    ['at least 1 GPU: a GPU count not said counts as none', {minGpus: 1}, ['h100-1x', 'h100-8x', 'h200-1x-unknown', 'rtx6000b-1x']],
    ['at least 0 GPUs: all', {minGpus: 0}, ['cpu-small', 'h100-1x', 'h100-8x', 'h200-1x-unknown', 'rtx6000b-1x', 'v2-h200']],
    ['a price cap, inclusive', {maxPrice: 2.5}, ['cpu-small', 'h100-1x', 'rtx6000b-1x']],
    ['a price cap in micro-dollars (0.1 + 0.2 is within 0.3)', {maxPrice: 0.3}, ['cpu-small']],
    ['a price cap with sold-out ones', {includeSoldOut: true, maxPrice: 2.5}, ['cpu-small', 'h100-1x', 'h100-1x-sold-out', 'rtx6000b-1x']],
    ['one resource by its exact name', {resource: 'h100-8x'}, ['h100-8x']],
    ['a resource name matches only exactly', {resource: 'H100-8X'}, []],
    ['a sold-out resource', {resource: 'h100-1x-sold-out'}, []],
    ['a resource and a cap below its price', {maxPrice: 19.99, resource: 'h100-8x'}, []],
    ['every criterion at once', {gpu: 'h100', maxPrice: 25, minGpus: 2, resource: 'h100-8x'}, ['h100-8x']],
  ])('%s', (_name, filter, expected) => {
    expect(names(filterOffers(OFFERS, filter))).toEqual(expected)
  })

  it.each<[string, OfferKind, string[]]>([
    ['nothing asked', {}, names(OFFERS)],
    ['a GPU model, whatever its price and capacity', {gpu: 'h100'}, ['h100-1x', 'h100-1x-sold-out', 'h100-8x']],
    ['a GPU count', {minGpus: 2}, ['h100-8x']],
    ['a resource', {resource: 'h100-1x-sold-out'}, ['h100-1x-sold-out']],
  ])('tells the kind of offer apart from its price and capacity: %s', (_name, kind, expected) => {
    expect(names(OFFERS.filter((offer) => isOfKind(offer, kind)))).toEqual(expected)
  })
})

describe('what up and run rent', () => {
  // up's request names a kind of offer and always a cap; what it may rent is what targon offers lists for the same
  // criteria, so that a criterion added to the filter applies to both.
  it.each<[string, OfferKind, number]>([
    ['a GPU model', {gpu: 'h100'}, 30],
    ['a GPU model under a tight cap', {gpu: 'h100'}, 2.4],
    ['a GPU count', {gpu: 'h100', minGpus: 8}, 30],
    ['a resource', {resource: 'rtx6000b-1x'}, 2],
    ['a sold-out resource', {resource: 'h100-1x-sold-out'}, 5],
    ['any offer under a cap', {}, 3],
  ])('is what targon offers lists for %s', (_name, kind, maxPrice) => {
    const wanted = {...kind, maxPrice}
    expect(rentableOffers(OFFERS, wanted)).toEqual(sortOffers(filterOffers(OFFERS, wanted)))
    expect(offersUnderCap(OFFERS, wanted)).toEqual(sortOffers(filterOffers(OFFERS, {...wanted, includeSoldOut: true})))
    expect(matchingOffers(OFFERS, wanted)).toEqual(OFFERS.filter((offer) => isOfKind(offer, kind)))
  })

  it.each<[string, OfferKind, number, string]>([
    ['no offer of the kind', {gpu: 'b300'}, 30, 'NOT_FOUND'],
    ['every offer of the kind above the cap', {gpu: 'h100', minGpus: 8}, 19.99, 'PRICE_CAP_EXCEEDED'],
    ['every offer under the cap sold out', {resource: 'h100-1x-sold-out'}, 5, 'NO_CAPACITY'],
  ])('is refused with the reason when there is %s', (_name, kind, maxPrice, code) => {
    expect(() => chooseCandidates(OFFERS, {...kind, maxPrice})).toThrow(expect.objectContaining({code}))
  })

  it('is cheapest first', () => {
    expect(chooseCandidates(OFFERS, {gpu: 'h100', maxPrice: 30}).map((offer) => offer.resource)).toEqual(['h100-1x', 'h100-8x'])
  })
})
