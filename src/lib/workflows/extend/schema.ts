/** The JSON contract of targon extend. */
import * as z from 'zod'

export const ExtendResultSchema = z.object({
  org: z.string(),
  vms: z.array(
    z.object({
      uid: z.string(),
      name: z.string().nullable(),
      ttl_expires_at: z.string().nullable().describe('the new TTL deadline; null: the VM has no TTL'),
      idle_hold_until: z.string().nullable().describe('no idle deletion before this; null: none held off'),
      idle_hold_on_vm: z
        .enum(['written', 'not-written'])
        .nullable()
        .describe(
          'the hold-off written on the VM too, where its idle limit lives (not-written: the VM could not be reached, a warning says why); null: no idle hold-off asked, or a VM without the bootstrap (no idle sampler)',
        ),
      limits_on_vm: z
        .enum(['written', 'not-written'])
        .nullable()
        .describe(
          'the new limits written into the file the VM carries (not-written: a warning says why; a guard reading the VM then goes by the stricter of its earlier file and a record); null: a VM without the bootstrap, which carries no limits',
        ),
      max_cost_usd: z.number().nullable().describe('the budget now'),
      budget_ends_at: z.string().nullable().describe('when the estimate reaches the budget, at the current price'),
    }),
  ),
})
export type ExtendResult = z.infer<typeof ExtendResultSchema>
