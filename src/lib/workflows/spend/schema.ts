/** The JSON contract of targon cost and targon credits. */
import * as z from 'zod'

import {BILLING_END_SOURCES, BILLING_START_SOURCES, VmFactsSchema} from '../../domain/ledger/schema.js'

export const COST_GROUPINGS = ['day', 'fleet', 'resource', 'vm'] as const
export type CostGrouping = (typeof COST_GROUPINGS)[number]

export const CostVmSchema = VmFactsSchema.extend({
  uid: z.string(),
  price_per_hour: z.number().describe('USD per hour, as the API reported it when the ledger first recorded the VM'),
  start: z.string().describe('when billing began (RFC 3339)'),
  start_source: z
    .enum(BILLING_START_SOURCES)
    .describe(
      "deploy: the deploy this config directory saw accepted; wake-registered: down --wake-registered deployed it to delete it; api-created: the API's created_at of a VM met running (made elsewhere, or before the ledger); first-seen: the first listing that showed it, when the API gave no creation time",
    ),
  end: z.string().nullable().describe('when billing ended; null while it bills (the estimate then runs up to now)'),
  end_source: z
    .enum([...BILLING_END_SOURCES, 'open'])
    .describe(
      "deleted: a deletion confirmed from this directory; tombstone: the deleted record Targon still listed (its updated_at, or the deleted event of an error record's history); history: a VM that left the listing unseen, ended at the deleted event of the server's history of it, kept between its last sighting and the listing that found it gone; last-seen: not confirmed, the last time this directory saw it (see bounded), when the history is missing or gives no delete; open: it still bills",
    ),
  bounded: z
    .boolean()
    .describe(
      'true when the end was not confirmed (last-seen): it is the last sighting (billing, or the last change of its error record), and billing stopped around then, before `found_gone_at`; a later report may move it up to the deleted event of the server history, never down',
    ),
  found_gone_at: z.string().nullable().describe('for a last-seen end: when a listing found it gone'),
  seconds: z.number().describe('billed seconds within the report range'),
  estimated_usd: z.number().describe('price_per_hour × seconds / 3600, rounded to 1/100 of a cent'),
})
export type CostVm = z.infer<typeof CostVmSchema>

export const CostGroupSchema = z.object({
  key: z.string().nullable().describe('the day (YYYY-MM-DD, UTC), fleet, resource or uid; null for VMs with no fleet or resource'),
  estimated_usd: z.number(),
  seconds: z.number(),
  vms: z.number().describe('VMs that billed in the group'),
})
export type CostGroup = z.infer<typeof CostGroupSchema>

export const CostExcludedSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  fleet: z.string().nullable(),
  status: z.string().nullable().describe('as the listing shows it now; null when it is not listed'),
  since: z.string().nullable().describe('when it began billing, as far as known'),
  open_seconds: z.number().nullable().describe('how long it billed: up to its end, or up to now while it has none'),
  kind: z
    .enum(['unknown-billing', 'no-price'])
    .describe(
      "why, in a word: an error record whose billing is unknown (no delete note, and the server's history could not tell), or no price",
    ),
  reason: z.string().describe('why it is not in the totals'),
})
export type CostExcluded = z.infer<typeof CostExcludedSchema>

export const CreditsCheckSchema = z.object({
  verdict: z
    .enum(['matches', 'differs', 'credits-unchanged', 'credits-rose', 'one-reading', 'unreadable'])
    .describe(
      'matches: the drop in credits is within 5% of the larger of drop and estimate, or within 1 cent; differs: it is not; credits-unchanged: the credits did not move while the estimate is above zero (a wallet debited in batches, or never); credits-rose: a top-up or refund in between; one-reading: fewer than two readings in the range (targon credits and cost --reconcile record one each run); unreadable: the credits could not be read now',
    ),
  from: z.string().nullable().describe('the earliest reading in the range (from 10 minutes before --from), compared'),
  to: z.string().nullable().describe("the latest reading up to --to (this run's own, when the range ends now), compared"),
  credits_from: z.number().nullable(),
  credits_to: z.number().nullable(),
  credits_drop_usd: z.number().nullable(),
  estimated_usd: z
    .number()
    .nullable()
    .describe('the estimate of every VM the ledger knows over the same interval, any fleet or owner; the VMs in `excluded` are left out'),
  difference_usd: z.number().nullable().describe('credits_drop_usd - estimated_usd'),
  unseen: z.array(z.string()).describe('what this comparison cannot see'),
})
export type CreditsCheck = z.infer<typeof CreditsCheckSchema>

export const CostResultSchema = z.object({
  org: z.string(),
  from: z.string(),
  to: z.string(),
  fleet: z.string().nullable().describe('--fleet; null for every fleet'),
  group_by: z.enum(COST_GROUPINGS),
  estimate: z.literal(true).describe('every figure is an estimate: Targon reports no charges per VM'),
  basis: z.string().describe('what the figures rest on'),
  total_usd: z.number().describe('the sum over `vms`; what is in `excluded` is not in it'),
  total_seconds: z.number(),
  groups: z.array(CostGroupSchema).describe('by --by, largest first (by day: the days with spend, in date order)'),
  days: z.array(CostGroupSchema).describe('per UTC day in the range, in date order, days without spend included'),
  vms: z.array(CostVmSchema),
  excluded: z.array(CostExcludedSchema).describe('VMs whose end or price is unknown: shown with their open duration, never in the totals'),
  complete: z.boolean().describe('false when the range reaches back before the ledger began or into pruned months'),
  incomplete_reason: z.string().nullable(),
  ledger_since: z.string().nullable().describe('from when on the ledger is whole: its first line, or the end of the months pruned'),
  reconcile: CreditsCheckSchema.nullable().describe('with --reconcile'),
})
export type CostResult = z.infer<typeof CostResultSchema>

export const CreditsResultSchema = z.object({
  org: z.string(),
  as_of: z.string(),
  credits: z.number(),
  currency: z.string().nullable(),
  burn_usd_per_hour: z
    .number()
    .describe(
      'the hourly price of every VM known to bill in the org now, any owner and any origin, as the listing shows it; records of unknown billing (possible_vms), unpriced_vms and invalid items are not in it',
    ),
  billing_vms: z.number().describe('VMs known to bill (vms)'),
  possible_burn_usd_per_hour: z
    .number()
    .describe(
      'the hourly price of the records whose billing is unknown (possible_vms): error records neither a delete note nor the server history has classified, or an error record of this tool taken as crashed; they bill if they crashed',
    ),
  possible_vms: z
    .array(z.object({uid: z.string(), name: z.string().nullable(), owner: z.string().nullable(), price_per_hour: z.number().nullable()}))
    .describe('the records of unknown billing, apart from vms'),
  possible_runway_hours: z
    .number()
    .nullable()
    .describe(
      'credits / (burn + possible burn); null when nothing is possible, or when a conclusive measured burn (measured_burn_conclusive) shows the records of unknown billing do not bill',
    ),
  measured_burn_usd_per_hour: z
    .number()
    .nullable()
    .describe(
      'the drop of the credits per hour between the oldest reading of this config directory from 15 min to 6 h ago and this one; null without such a reading, or when the credits rose',
    ),
  measured_since: z.string().nullable().describe('when the reading that measured_burn_usd_per_hour starts from was made'),
  measured_burn_conclusive: z
    .boolean()
    .nullable()
    .describe(
      'whether the measured burn says anything of the records of unknown billing: true when it is at least 95 % of burn_usd_per_hour (less a cent an hour); false when it is below (equal readings, credits debited in batches): then it clears nothing and the alarm counts the possible burn; null: nothing measured',
    ),
  mine: z.object({
    owner: z
      .string()
      .nullable()
      .describe('the owner set (config owner, TARGON_OWNER); null: none is set, and the share is every VM of this tool in the org'),
    burn_usd_per_hour: z.number(),
    billing_vms: z.number(),
  }),
  unpriced_vms: z.array(z.string()).describe('uids billing without a price in the listing: the burn rate leaves them out'),
  uncertain_vms: z.array(z.string()).describe('the uids of possible_vms (not in burn_usd_per_hour)'),
  invalid_items: z
    .number()
    .describe(
      'listed items that fail the checks of the API answer: they may bill, and are not in the burn rate (targon status names them)',
    ),
  runway_hours: z
    .number()
    .nullable()
    .describe(
      'credits / burn rate; null when nothing priced bills (then --min-runway cannot fire; a warning says when prices are missing)',
    ),
  vms: z
    .array(z.object({uid: z.string(), name: z.string().nullable(), owner: z.string().nullable(), price_per_hour: z.number().nullable()}))
    .describe('the VMs counted as billing'),
  runway_ends_at: z.string().nullable(),
  min_runway_hours: z.number().nullable().describe('--min-runway'),
  short: z
    .boolean()
    .describe(
      'the runway is shorter than --min-runway (exit 14, RUNWAY_SHORT), at the known burn or, unless a conclusive measured burn clears them, with the possible burn',
    ),
})
export type CreditsResult = z.infer<typeof CreditsResultSchema>
