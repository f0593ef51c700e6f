/** What the spend ledger keeps of a VM, in the names its lines and cost reports share. */
import * as z from 'zod'

/**
 * Where a VM's billing start comes from (`start_source`): the deploy this directory saw accepted, or the API's
 * created_at of a VM a listing found. Also the spend ledger's on-disk values: never renamed, only added to.
 */
export const BILLING_START_SOURCES = ['deploy', 'wake-registered', 'api-created', 'first-seen'] as const
/**
 * How a VM's billing end is known (`end_source`): a deletion confirmed here, a tombstone's updated_at, the `deleted`
 * event of the server's history of a VM that left the listing unseen, or the last time it was seen billing. Also the
 * spend ledger's on-disk values: never renamed, only added to.
 */
export const BILLING_END_SOURCES = ['deleted', 'tombstone', 'last-seen', 'history'] as const

/** What the spend ledger keeps of a VM, and what a cost report says of it. */
export const VmFactsSchema = z.object({
  name: z.string().nullable(),
  fleet: z.string().nullable(),
  owner: z.string().nullable(),
  resource: z.string().nullable(),
  gpu_model: z.string().nullable(),
  gpu_count: z.number().nullable(),
  price_per_hour: z.number().nullable(),
})
export type VmFacts = z.infer<typeof VmFactsSchema>
