/**
 * Which offers a run of `targon up` may rent: those matching its resource or GPU model, with
 * capacity, at or under its price cap, cheapest first; and, when there are none, why not.
 */
import type {Offer} from '../contract.js'
import {filterOffers, matchesGpu, sortOffers, withinCap} from '../offers/offers.js'
import {TargonError} from '../shell/errors.js'

/** What a run asks for: one resource, or any offer of a GPU model (with at least minGpus GPUs), under a cap. */
export interface OfferWanted {
  resource?: string
  gpu?: string
  minGpus?: number
  maxPrice: number
}

/** Offers of the resource or GPU model asked for, whatever their price and capacity. */
export function matchingOffers(offers: Offer[], wanted: OfferWanted): Offer[] {
  return offers.filter(
    (offer) =>
      (wanted.resource ? offer.resource === wanted.resource : true) &&
      (wanted.gpu ? matchesGpu(offer, wanted.gpu) : true) &&
      (wanted.minGpus === undefined || (offer.gpu_count ?? 0) >= wanted.minGpus),
  )
}

/** Matching offers at or under the cap, whatever their capacity, cheapest first: what a wait for capacity watches. */
export function offersUnderCap(offers: Offer[], wanted: OfferWanted): Offer[] {
  return sortOffers(matchingOffers(offers, wanted).filter((offer) => withinCap(offer.price_per_hour, wanted.maxPrice)))
}

/** Matching offers with capacity at or under the cap, cheapest first. */
export function rentableOffers(offers: Offer[], wanted: OfferWanted): Offer[] {
  return sortOffers(filterOffers(matchingOffers(offers, wanted), {maxPrice: wanted.maxPrice}))
}

export function describeWanted(wanted: OfferWanted): string {
  return wanted.resource ?? (wanted.gpu ? `${wanted.gpu} GPUs` : 'GPU VMs')
}

/** Offers that may be rented, cheapest first; when there are none, the error that says why (exit 4, 9 or 10). */
export function chooseCandidates(offers: Offer[], wanted: OfferWanted): Offer[] {
  const candidates = rentableOffers(offers, wanted)
  if (candidates.length > 0) return candidates
  throw whyNoOffer(offers, wanted)
}

/** Why nothing may be rented: no matching offer (NOT_FOUND), none with capacity (NO_CAPACITY), none under the cap (PRICE_CAP_EXCEEDED). */
export function whyNoOffer(offers: Offer[], wanted: OfferWanted): TargonError {
  const what = describeWanted(wanted)
  const matching = matchingOffers(offers, wanted)
  if (matching.length === 0) {
    return new TargonError('NOT_FOUND', `no offer matches ${what}`, {
      hint: 'see targon offers --all for the resources and GPU models on offer',
    })
  }

  const cheapest = sortOffers(matching).find((offer) => offer.available === null || offer.available > 0)
  if (!cheapest)
    return new TargonError('NO_CAPACITY', `every offer for ${what} is sold out`, {
      hint: 'try again later, or see targon offers for other GPUs',
    })
  return new TargonError(
    'PRICE_CAP_EXCEEDED',
    `no offer for ${what} at or under ${wanted.maxPrice.toFixed(2)} USD/h; the cheapest is ${cheapest.resource} at ${cheapest.price_per_hour.toFixed(2)} USD/h`,
    {
      details: {cheapest: {price_per_hour: cheapest.price_per_hour, resource: cheapest.resource}},
      hint: `raise --max-price to ${cheapest.price_per_hour} or more, or pick another GPU`,
    },
  )
}
