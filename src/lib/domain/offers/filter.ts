/**
 * The one offer filter: which offers `targon offers` lists, and which ones `targon up` and `targon run` (which rents
 * through up) may rent. A criterion added here applies to all three.
 */

import {gpuKey, withinCap} from './offers.js'
import type {Offer} from './schema.js'

export interface OfferFilter {
  /** One resource (SKU) by its exact name, as `targon up` and `targon run` take it. */
  resource?: string
  /** A GPU model in any common spelling (see gpuKey). */
  gpu?: string
  /** At least this many GPUs per VM; an offer that does not say how many has none. */
  minGpus?: number
  /** USD per hour for the whole VM, inclusive (see withinCap). */
  maxPrice?: number
  /** Keep sold-out offers too; offers whose availability is unknown are always kept. */
  includeSoldOut?: boolean
}

/** The criteria of what an offer is, apart from its price and capacity: what `targon up` and `targon run` rent is always capped and never sold out. */
export type OfferKind = Omit<OfferFilter, 'maxPrice' | 'includeSoldOut'>

/**
 * Whether the offer is of the kind asked for. A new criterion of what an offer is (its GPU memory, region...) goes
 * here, not in filterOffers, so that up's refusals still tell "no such offer" from "too dear" and "sold out".
 */
export function isOfKind(offer: Offer, kind: OfferKind): boolean {
  if (kind.resource && offer.resource !== kind.resource) return false
  if (kind.gpu && !matchesGpu(offer, kind.gpu)) return false
  if (kind.minGpus !== undefined && (offer.gpu_count ?? 0) < kind.minGpus) return false
  return true
}

/** The offers of the kind asked for, at or under the price cap, and with capacity unless sold-out ones are included. */
export function filterOffers(offers: Offer[], filter: OfferFilter): Offer[] {
  return offers.filter((offer) => {
    if (!isOfKind(offer, filter)) return false
    if (filter.maxPrice !== undefined && !withinCap(offer.price_per_hour, filter.maxPrice)) return false
    if (!filter.includeSoldOut && offer.available !== null && offer.available <= 0) return false
    return true
  })
}

export function matchesGpu(offer: Offer, gpu: string): boolean {
  return offer.gpu_model !== null && gpuKey(offer.gpu_model) === gpuKey(gpu)
}
