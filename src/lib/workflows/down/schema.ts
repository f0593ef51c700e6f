/** The JSON contract of targon down. */
import * as z from 'zod'

import {DeleteResultSchema} from '../../domain/deletion/schema.js'
import {USAGE_STATES} from '../../domain/idle/schema.js'

export const DownResultSchema = z.object({
  org: z.string(),
  dry_run: z.boolean(),
  selection: z.object({
    targets: z.array(z.string()),
    all: z.boolean(),
    fleet: z.string().nullable(),
    older_than_seconds: z.number().nullable(),
    expired: z.boolean().describe('VMs whose --ttl ran out or whose --max-cost budget is spent (estimated cost; both local)'),
    over_cost_usd: z.number().nullable().describe('--over-cost: VMs whose estimated cost (price x age) exceeds this'),
    any_origin: z.boolean(),
    owner: z.string().nullable().describe('the owner whose VMs bulk selectors take (config key owner, TARGON_OWNER); null: every owner'),
    any_owner: z.boolean(),
    idle: z.boolean().describe('--idle: VMs whose idle clock says idle past their limit'),
    idle_limit_seconds: z.number().nullable().describe("--idle-limit: the limit of VMs without one of their own (a VM's own wins)"),
    jobs_done: z.boolean().describe('--jobs-done: VMs whose run --down job has ended (read on each VM); reason job-done'),
  }),
  results: z.array(DeleteResultSchema),
  survivors: z.array(z.string()).describe('uids that still bill (or may) after deletion'),
  kept: z
    .array(
      z.object({
        uid: z.string(),
        name: z.string().nullable(),
        state: z.enum(USAGE_STATES),
        idle_seconds: z.number().nullable(),
        reason: z.string(),
      }),
    )
    .describe(
      'with --idle or --jobs-done: VMs selected otherwise but kept, being busy, not idle long enough, without an ended --down job, or unreadable',
    ),
  deleted_listed: z
    .array(z.object({uid: z.string(), name: z.string().nullable()}))
    .describe('bulk selectors: deleted VMs (tombstones) Targon still lists within the selection, left alone as they do not bill'),
})
export type DownResult = z.infer<typeof DownResultSchema>
