/** The JSON contract of targon sweep. */
import * as z from 'zod'

import {DeleteResultSchema} from '../../domain/deletion/schema.js'
import {DownResultSchema} from '../down/schema.js'
import {SweepDstackSyncSchema} from '../dstack/schema.js'
import {CreditsResultSchema} from '../spend/schema.js'

/** Why targon sweep deletes a VM: the limit it reached. */
export const SWEEP_REASONS = ['ttl', 'max-cost', 'over-cost', 'idle', 'job-done'] as const
export type SweepReason = (typeof SWEEP_REASONS)[number]

export const SweepResultSchema = z.object({
  org: z.string().nullable().describe('null when the sweep was skipped before it read anything'),
  skipped: z
    .string()
    .nullable()
    .describe('why nothing was done (another sweep of this config directory and profile is running); null when the sweep ran'),
  dry_run: z.boolean(),
  selection: z.object({
    fleet: z.string().nullable().describe('--fleet: only this fleet; null: every fleet'),
    owner: z.string().nullable().describe('the owner whose VMs are swept (config key owner, TARGON_OWNER); null: every owner'),
    any_owner: z.boolean(),
    over_cost_usd: z.number().nullable().describe('--over-cost: also delete VMs whose estimated cost exceeds this'),
    idle_limit_seconds: z.number().nullable().describe('--idle-limit: the idle limit of VMs without one of their own'),
    min_runway_hours: z.number().nullable().describe('--min-runway'),
    team: z.boolean().describe("--team: the org's team guard, every owner's VMs by the limits they carry"),
    default_ttl_seconds: z
      .number()
      .nullable()
      .describe('--default-ttl: the TTL of VMs whose limits are unknown; null: they are left alone'),
  }),
  results: z
    .array(
      DeleteResultSchema.extend({
        reason: z
          .enum(SWEEP_REASONS)
          .nullable()
          .describe('the limit it reached; null for an invalid-answer item, whose limits cannot be read'),
      }),
    )
    .describe(
      'each VM past a limit, deleted (or, with --dry-run, that would be), and each listed item that failed the checks of the API answer (invalid-answer: reported as down reports it, never deleted; it keeps the exit at 11)',
    ),
  survivors: z.array(z.string()).describe('uids selected that still bill (or may) after the sweep: exit 11'),
  kept: DownResultSchema.shape.kept.describe('VMs with an idle limit kept: busy, not idle long enough, or their clock unreadable'),
  unlimited: z
    .array(
      z.object({
        uid: z.string(),
        name: z.string().nullable(),
        origin: z.enum(['targon', 'other']).describe('targon: made by this tool, with no limit; other: made by something else'),
        price_per_hour: z.number().nullable(),
      }),
    )
    .describe('what bills and no limit covers: reported, never deleted'),
  not_covered: z
    .array(
      z.object({
        uid: z.string(),
        name: z.string().nullable(),
        owner: z.string().nullable(),
        reason: z
          .string()
          .describe(
            'why its limits are unknown: it could not be reached, carries no limits file (made before the team guard key, or never bootstrapped), or its file fails the checks',
          ),
      }),
    )
    .describe('VMs of this tool whose limits are unknown here: reported, never deleted (unless --default-ttl bounds them)'),
  warned: z
    .array(
      z.object({
        uid: z.string(),
        name: z.string().nullable(),
        owner: z.string().nullable(),
        limit: z.enum(['ttl', 'max-cost', 'idle']),
        fires_at: z.string().describe('when the limit fires: its TTL, when the estimate reaches its budget, or idle since + limit'),
        idle_since: z.string().nullable().describe('idle: since when it is idle (one warning per idle stretch)'),
        price_per_hour: z.number().nullable(),
        extend_command: z
          .string()
          .describe(
            'the targon extend command that postpones it by an hour or the window when longer (a budget: --max-cost, the budget plus the price for that time, rounded up to cents), shell-quoted, to paste as it is: with TARGON_CONFIG_DIR and --profile when not the defaults, and --any-owner when the VM is not of the owner the sweep ran as',
          ),
      }),
    )
    .describe('with --warn: the limits that fire within the window, warned about now (each VM and deadline once)'),
  dstack_sync: SweepDstackSyncSchema.nullable().describe(
    'with a dstack server configured: the sync of each targon-* dstack fleet the sweep covers, after its deletions; null without dstack, under --dry-run, or after an interrupt',
  ),
  runway: CreditsResultSchema.pick({
    burn_usd_per_hour: true,
    credits: true,
    runway_ends_at: true,
    runway_hours: true,
    short: true,
  })
    .nullable()
    .describe('with --min-runway: the credits after the deletions, as targon credits reads them; short exits 14'),
})
export type SweepResult = z.infer<typeof SweepResultSchema>
