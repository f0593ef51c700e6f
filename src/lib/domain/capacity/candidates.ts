/**
 * Which offers a run of `targon up` may rent: those matching its resource or GPU model, with
 * capacity, at or under its price cap, cheapest first; and, when there are none, why not.
 */
import type {Offer} from '../offers/schema.js'
import {type OfferKind, filterOffers, isOfKind} from '../offers/filter.js'
import {sortOffers} from '../offers/offers.js'
import {TargonError} from '../../core/errors.js'

/**
 * What a run asks for: offers of a kind (one resource, or any offer of a GPU model...), always under a cap. Its
 * criteria are the offer filter's, which `targon offers` lists by.
 */
export type OfferWanted = OfferKind & {maxPrice: number}

/** Offers of the kind asked for, whatever their price and capacity. */
export function matchingOffers(offers: Offer[], wanted: OfferWanted): Offer[] {
  return offers.filter((offer) => isOfKind(offer, wanted))
}

/** Matching offers at or under the cap, whatever their capacity, cheapest first: what a wait for capacity watches. */
export function offersUnderCap(offers: Offer[], wanted: OfferWanted): Offer[] {
  return sortOffers(filterOffers(offers, {...wanted, includeSoldOut: true}))
}

/** Matching offers with capacity at or under the cap, cheapest first. */
export function rentableOffers(offers: Offer[], wanted: OfferWanted): Offer[] {
  return sortOffers(filterOffers(offers, {...wanted, includeSoldOut: false}))
}

export function describeWanted(wanted: OfferWanted): string {
  return wanted.resource ?? (wanted.gpu ? `${wanted.gpu} GPUs` : 'GPU VMs')
}

/**
 * The candidate offers' units, shared by the VMs of one run: a fleet never registers more workloads on an offer
 * than it lists available (Targon would refuse the extra deploys and leave them registered, undeletable), and takes
 * the next offer under the cap for the rest. `available: null` counts as unlimited.
 */
export class OfferUnits {
  private readonly taken = new Map<string, number>()

  constructor(readonly candidates: Offer[]) {}

  /** Takes a unit of the cheapest candidate that has one left, after `after` when given; undefined when none has. */
  take(after?: string | null): Offer | undefined {
    const start = after == null ? 0 : this.candidates.findIndex((offer) => offer.resource === after) + 1
    const offer = this.candidates
      .slice(start)
      .find((each) => each.available === null || (this.taken.get(each.resource) ?? 0) < each.available)
    if (offer) this.taken.set(offer.resource, (this.taken.get(offer.resource) ?? 0) + 1)
    return offer
  }
}

/** Offers that may be rented, cheapest first; when there are none, the error that says why (exit 4, 9 or 10). */
export function chooseCandidates(offers: Offer[], wanted: OfferWanted): Offer[] {
  const candidates = rentableOffers(offers, wanted)
  if (candidates.length > 0) return candidates
  throw whyNoOffer(offers, wanted)
}

/**
 * Why nothing may be rented: no matching offer (NOT_FOUND); none priced at or under the cap, whatever its capacity
 * (PRICE_CAP_EXCEEDED: waiting would not help); offers under the cap, all sold out (NO_CAPACITY: worth a retry).
 */
export function whyNoOffer(offers: Offer[], wanted: OfferWanted): TargonError {
  const what = describeWanted(wanted)
  const matching = matchingOffers(offers, wanted)
  if (matching.length === 0) {
    return new TargonError('NOT_FOUND', `no offer matches ${what}`, {
      hint: 'see targon offers --all for the resources and GPU models on offer',
    })
  }

  if (offersUnderCap(offers, wanted).length > 0)
    return new TargonError('NO_CAPACITY', `every offer for ${what} at or under ${wanted.maxPrice.toFixed(2)} USD/h is sold out`, {
      hint: 'try again later or with --wait 1h, or see targon offers for other GPUs',
    })
  const cheapest = sortOffers(matching)[0] as Offer
  const soldOut = cheapest.available === 0 ? ', sold out now' : ''
  return new TargonError(
    'PRICE_CAP_EXCEEDED',
    `no offer for ${what} at or under ${wanted.maxPrice.toFixed(2)} USD/h; the cheapest is ${cheapest.resource} at ${cheapest.price_per_hour.toFixed(2)} USD/h${soldOut}`,
    {
      details: {cheapest: {price_per_hour: cheapest.price_per_hour, resource: cheapest.resource}},
      hint: `raise --max-price to ${cheapest.price_per_hour} or more, or pick another GPU`,
    },
  )
}
