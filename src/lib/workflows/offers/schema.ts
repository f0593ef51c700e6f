/** The JSON contract of targon offers: the listing, with the filters it was read with. */
import * as z from 'zod'

import {OFFER_SORTS} from '../../domain/offers/offers.js'
import {OfferSchema} from '../../domain/offers/schema.js'

export const OffersResultSchema = z.object({
  offers: z.array(OfferSchema),
  filters: z.object({
    gpu: z.string().nullable(),
    min_gpus: z.number().nullable(),
    max_price: z.number().nullable(),
    include_sold_out: z.boolean(),
    sort: z.enum(OFFER_SORTS),
  }),
  as_of: z.string().describe('RFC 3339 time of the inventory read'),
})
export type OffersResult = z.infer<typeof OffersResultSchema>
