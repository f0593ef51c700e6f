/** An offer as every command shows it in its JSON (targon offers, up --plan, status). */
import * as z from 'zod'

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
