/** The JSON contract of targon offers: an offer as every command shows it, and the listing. */
import * as z from 'zod'

export const OFFER_SORTS = ['price', 'gpu', 'available'] as const

export const OfferSchema = z.object({
  resource: z.string().describe('SKU; the resource name given to `targon up`'),
  display_name: z.string().nullable(),
  gpu_model: z.string().nullable().describe('normalized, vendor prefix stripped'),
  gpu_count: z.number().nullable(),
  gpu_memory_gb: z.number().nullable().describe('per GPU in GB, as the vendor states it, where the model is known'),
  vcpus: z.number().nullable(),
  memory_mib: z.number().nullable(),
  disk_mib: z.number().nullable(),
  price_per_hour: z.number().describe('USD per hour for the whole VM'),
  available: z.number().nullable().describe('null when the API does not say'),
  within_cap: z.boolean().nullable().describe('null without --max-price'),
})
export type Offer = z.infer<typeof OfferSchema>

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
