/** The JSON contract of targon status. */
import * as z from 'zod'

import {DstackFleetSchema} from '../../adapters/bootstrap/dstack-fleet.js'
import {GuardCoverageSchema} from '../guard/schema.js'
import {UsageSchema} from '../../domain/idle/schema.js'
import {DSTACK_STATES} from '../dstack/vm-states.js'

export const StatusVmSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  fleet: z.string().nullable(),
  status: z.string().describe('as the API says; unknown values verbatim'),
  public_ip: z.string().nullable(),
  ssh_port: z.number().nullable(),
  resource: z.string().nullable(),
  gpu_model: z.string().nullable(),
  gpu_count: z.number().nullable(),
  price_per_hour: z.number().nullable().describe("USD per hour while it runs (the workload's cost_per_hour): the estimates rest on it"),
  frozen_price_per_hour: z
    .number()
    .nullable()
    .describe("the workload's frozen_cost_per_hour: the rate while frozen, never used for the cap or the estimates"),
  created_at: z.string().nullable(),
  age_seconds: z.number().nullable(),
  estimated_cost_usd: z.number().nullable().describe('age x price: an estimate, Targon reports no per-VM charges'),
  ttl_expires_at: z.string().nullable(),
  ttl_left_seconds: z.number().nullable(),
  max_cost_usd: z
    .number()
    .nullable()
    .describe(
      'the budget of up --max-cost: the lower of the local record and the file the VM carries; null: none (or unknown: limits_source null)',
    ),
  limits_source: z
    .enum(['vm', 'local', 'both'])
    .nullable()
    .describe(
      'where its limits (ttl_expires_at, max_cost_usd, the idle limit) come from: this directory\'s record, the file the VM carries (read over SSH), or both (then the stricter of each); null: none known (limits unknown, never "no limit"), or a VM not made by this tool',
    ),
  vm_limits: z
    .enum(['read', 'missing', 'malformed', 'unreachable', 'not-read'])
    .describe(
      'the file of limits the VM carries: read; missing (made before limits travelled, or never bootstrapped); malformed (fails the checks); unreachable (no connection, or no key of this directory on it); not-read (not running, not made by this tool, or no key of this directory reaches it)',
    ),
  vm_limits_problem: z.string().nullable().describe("why the VM's file could not be gone by; null when read or not asked"),
  budget_left_usd: z
    .number()
    .nullable()
    .describe('max_cost_usd minus estimated_cost_usd (an estimate); negative: spent, targon down --expired deletes it'),
  bootstrapped: z
    .boolean()
    .nullable()
    .describe(
      "as the local record says; for a VM without one, as the VM's bootstrap marker says when --usage connected to it; null: not known",
    ),
  billing: z
    .boolean()
    .nullable()
    .describe(
      "whether it costs money now; null: an error record of unknown billing (no delete note, and the server's history could not tell)",
    ),
  billing_assumed: z
    .boolean()
    .describe(
      'made here, billing unknown (billing is null): an error record of a VM this config directory created, with no delete of it noted, that the server history could not classify (another machine may have deleted it); treated as billing where safety needs it: bulk down deletes it, credits counts it in the possible burn',
    ),
  deleted: z.boolean().describe('a tombstone: deleted, still listed for a while, no longer billing (shown with --show-deleted)'),
  history: z
    .enum(['deleted', 'crashed', 'unknown'])
    .nullable()
    .describe(
      "for an error record without a delete note: what the server's history of it said (deleted: a tombstone; crashed: it bills; unknown: it could not tell); null when it was not asked",
    ),
  origin: z.enum(['this-tool', 'other']),
  owner: z.string().nullable().describe('whose it is in a shared org (its project); null: no owner, as VMs from before owners, or unknown'),
  owner_known: z
    .boolean()
    .describe(
      'false: its owner was not read (a VM of another tool, or a tombstone) or could not be (the listing has no project_id, and the full read of the workload failed)',
    ),
  local_record: z.enum(['present', 'missing']),
  idle_seconds: z.number().nullable().describe('with --usage: how long it has been idle; null without --usage or when unreadable'),
  idle_reason: z.string().nullable().describe('with --usage: why it is idle, busy or unreadable; null without --usage'),
  usage: UsageSchema.nullable().describe('with --usage, for running VMs: what its idle clock and a live sample say; null otherwise'),
  dstack_state: z
    .enum(DSTACK_STATES)
    .nullable()
    .describe(
      'with a dstack server configured: in-fleet (a targon-* dstack fleet holds it), busy (held, and running a dstack job), not-in-fleet (no targon-* dstack fleet holds it), unknown (dstack could not be read: a warning says why); null: no dstack server is configured',
    ),
  ends_by: z
    .string()
    .describe(
      'what ends it and when, for a person: "TTL 14:05Z", "idle 12m/30m" (idle time with --usage, else ?), "cost 4.10/5.00", joined by ", "; "no limit"',
    ),
})
export type StatusVm = z.infer<typeof StatusVmSchema>

export const OrgBillingGroupSchema = z.object({
  group: z
    .enum(['owner', 'no-owner', 'owner-unknown', 'other-origin'])
    .describe(
      "owner: an owner's VMs; no-owner: this tool's VMs in no owner's project (from before owners, or made with no owner set); owner-unknown: this tool's VMs whose owner could not be read; other-origin: VMs this tool did not make",
    ),
  owner: z.string().nullable().describe('the owner, for group owner; null for the other groups'),
  billing_count: z.number().describe('VMs of the group known to bill'),
  price_per_hour: z.number().describe('USD per hour: the sum of their prices, those without one left out'),
  unpriced_count: z.number().describe('VMs of the group known to bill without a price in the listing: not in price_per_hour'),
})
export type OrgBillingGroup = z.infer<typeof OrgBillingGroupSchema>

export const OrgBillingSchema = z.object({
  price_per_hour: z
    .number()
    .describe(
      "USD per hour that the whole org's VMs known to bill cost, whatever the selection: every owner and origin (the burn rate of credits)",
    ),
  billing_count: z.number().describe('VMs known to bill in the org'),
  unpriced_count: z.number().describe('of them, VMs without a price in the listing: not in price_per_hour'),
  unknown_billing_count: z
    .number()
    .describe('records of unknown billing and listed items that fail the checks of the API answer: they may bill, and are in no sum'),
  by_owner: z
    .array(OrgBillingGroupSchema)
    .describe('the same split by whose the VMs are: owners by name, then no-owner, owner-unknown, other-origin'),
})
export type OrgBilling = z.infer<typeof OrgBillingSchema>

export const StatusResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('the fleet shown (--fleet, or the configured fleet with --dstack-fleet); null: every fleet'),
  vms: z.array(StatusVmSchema),
  drift: z.array(z.object({uid: z.string().nullable(), name: z.string().nullable(), kind: z.enum(['server-only', 'local-only'])})),
  totals: z.object({
    count: z.number().describe('VMs listed above'),
    billing_count: z.number().describe('VMs that bill; price and cost totals count only these'),
    unknown_billing_count: z
      .number()
      .describe("error records of unknown billing: no delete note, and the server's history could not tell (targon down settles them)"),
    price_per_hour: z.number(),
    estimated_cost_usd: z.number(),
    deleted_hidden_count: z
      .number()
      .describe('deleted VMs (tombstones) Targon still lists that the selection leaves out of vms; 0 with --show-deleted or named VMs'),
  }),
  dstack_fleet: DstackFleetSchema.nullable().describe('with --dstack-fleet: the fleet file for the bootstrapped, running VMs'),
  invalid_answers: z
    .array(z.object({uid: z.string().nullable().describe('as the API sent it'), problem: z.string(), billing: z.null()}))
    .describe('listed items that failed the checks of the API answer: they may bill, and nothing is derived from them'),
  owner: z.string().nullable().describe('the owner whose VMs are shown; null: every owner'),
  outside_owner: z
    .array(
      z.object({
        owner: z.string().nullable().describe('null: no owner, or unknown'),
        owner_known: z.boolean(),
        billing_count: z.number(),
      }),
    )
    .describe("VMs of this tool that bill in the org but are not shown, being other owners' or no one's (see --any-owner)"),
  guard: GuardCoverageSchema,
  org_billing: OrgBillingSchema.describe(
    "what the whole org bills per hour, split by owner, whatever the selection (the text output's last line)",
  ),
})
export type StatusResult = z.infer<typeof StatusResultSchema>
