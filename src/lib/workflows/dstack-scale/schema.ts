/** The JSON contract of targon dstack scale. */
import * as z from 'zod'

import {DeleteResultSchema} from '../../domain/deletion/schema.js'
import {DownResultSchema} from '../down/schema.js'
import {UpPlanSchema} from '../up/schema.js'

export const DstackScaleResultSchema = z.object({
  org: z.string(),
  fleet: z.string().describe('the targon fleet'),
  dstack_fleet: z.string().describe('the dstack SSH fleet that holds its VMs: targon-<fleet>'),
  project: z.string().describe('the dstack project'),
  dry_run: z.boolean(),
  waiting_runs: z
    .array(
      z.object({
        id: z.string(),
        name: z.string().nullable(),
        status: z.string().describe("dstack's run status: submitted or pending"),
        why: z
          .enum(['submitted', 'no-capacity'])
          .describe('submitted: its job has looked for capacity for 30 s or more; no-capacity: it found none and waits to be retried'),
      }),
    )
    .describe('the runs of the project that wait for capacity and may run on the dstack fleet'),
  hosts: z
    .object({idle: z.number(), busy: z.number(), coming: z.number()})
    .describe("the fleet's VMs by their dstack state: idle, busy with a job, on their way (not yet idle in dstack)"),
  rent: z.number().describe('how many VMs it rents (with --dry-run: would rent)'),
  plan: UpPlanSchema.nullable().describe("with --dry-run, when it would rent: up --dry-run's plan of it (offers, prices, limits)"),
  rented: z
    .array(z.object({uid: z.string(), name: z.string(), resource: z.string(), price_per_hour: z.number().nullable()}))
    .describe('the VMs rented, bootstrapped and running'),
  synced: z.boolean().nullable().describe('whether the rented VMs went into the dstack fleet; null: nothing was rented'),
  removed: z
    .array(DeleteResultSchema)
    .describe('hosts that dstack left idle past --idle, taken out of dstack, then deleted (with --dry-run: would-delete)'),
  kept: DownResultSchema.shape.kept.describe('hosts idle in dstack but kept: busy on the VM, not idle long enough, or unreadable'),
  nothing_done: z
    .object({
      reason: z.enum(['no-waiting-runs', 'idle-host', 'hosts-coming', 'at-max']),
      message: z.string(),
    })
    .nullable()
    .describe('why nothing was rented nor deleted, when nothing was (hosts idle in dstack but kept are in kept)'),
  limits: z
    .object({ttl_seconds: z.number(), idle_limit_seconds: z.number(), max_cost_usd: z.number().nullable()})
    .describe('the limits every VM it rents carries, as up writes them'),
})
export type DstackScaleResult = z.infer<typeof DstackScaleResultSchema>
