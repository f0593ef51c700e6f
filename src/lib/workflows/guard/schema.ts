/** The JSON contract of the targon guard commands, and the guard coverage that targon status reports. */
import * as z from 'zod'

import {GuardKeySchema} from '../../adapters/ssh/guard-keys.js'

export const GuardPassSchema = z.object({
  at: z.string().describe('when the sweep started, RFC 3339'),
  exit_code: z.number(),
  duration_ms: z.number(),
  deleted: z.number().describe('VMs it deleted'),
  still_billing: z.number().describe('VMs selected that still bill after it'),
  skipped: z.boolean().describe('another sweep was running: it did nothing'),
})
export type GuardPass = z.infer<typeof GuardPassSchema>

export const GuardEntrySchema = z.object({
  kind: z.enum(['cron', 'systemd']),
  config_dir: z.string(),
  profile: z.string(),
  org: z.string(),
  owner: z.string().nullable().describe('the owner whose VMs it sweeps; null: none set (always for a team guard)'),
  team: z
    .boolean()
    .describe(
      "the org's team guard (guard install --team): it sweeps every owner's VMs by the limits they carry, over the team guard's key",
    ),
  every_seconds: z.number().nullable().describe('the period of its schedule; null when the entry was edited into another'),
  node: z.string().nullable().describe('the absolute path of node that it runs'),
  cli: z.string().nullable().describe('the absolute path of the CLI that it runs'),
  files: z.array(z.string()).nullable().describe('systemd: its service and timer files; null for cron (the user crontab)'),
})
export type GuardEntry = z.infer<typeof GuardEntrySchema>

export const GuardInstallResultSchema = z.object({
  installed: GuardEntrySchema,
  guard_key: GuardKeySchema.nullable().describe(
    "with --team: the team guard's key, registered with the org, that every later up adds to the VMs it makes; null without --team",
  ),
  replaced: z.boolean().describe('a guard of this directory and profile was there and was replaced'),
  enabled: z
    .boolean()
    .nullable()
    .describe('systemd: whether systemctl enabled the timer (false: the units are written, enable them by hand); null for cron'),
  log: z.string().describe("where the sweeps' output goes (rotated past 1 MiB)"),
})

export const CoveredVmSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  owner: z.string().nullable().describe('its owner in a shared org; null: none, or not known'),
})
export type CoveredVm = z.infer<typeof CoveredVmSchema>

export const VmCoverageSchema = z
  .object({
    org: z.string(),
    guards: z
      .array(
        z.object({
          kind: z
            .enum(['local', 'team'])
            .describe(
              "local: this directory's guard, which covers the VMs recorded here (of its owner, when it has one); team: a team guard of the org, which covers the VMs that carry its key",
            ),
          key: GuardKeySchema.nullable().describe("team: the team guard's key in the org; null for local"),
          here: z.boolean().describe("installed on this machine for this directory and profile (a team guard's key is this directory's)"),
          owner: z.string().nullable().describe('local: the owner it sweeps for; null: none set, and for team'),
          vms: z.array(CoveredVmSchema).describe('the VMs it covers'),
        }),
      )
      .describe("this directory's guard, and every team guard key of the org (guard install --team, here or on another machine)"),
    not_covered: z
      .array(CoveredVmSchema)
      .describe(
        "this tool's VMs in the org that none of these guards covers (a guard on another machine for another directory may): made before a team guard's key existed, or with none registered",
      ),
    unknown: z
      .array(CoveredVmSchema)
      .describe('VMs whose keys could not be read (a warning says why), and that no local guard covers: maybe covered, maybe not'),
  })
  .describe('which VMs each guard covers, and which none covers')
export type VmCoverage = z.infer<typeof VmCoverageSchema>

export const GuardStatusResultSchema = z.object({
  config_dir: z.string(),
  profile: z.string(),
  guards: z.array(GuardEntrySchema).describe('what is installed for this directory and profile (cron, systemd, or none)'),
  last_runs: z.array(GuardPassSchema).describe('the last runs, newest last'),
  next_run_at: z.string().nullable().describe('by the schedule and this clock; null when nothing is installed'),
  log: z.string(),
  problems: z.array(z.string()).describe('what stops the guard from working: a missing node or CLI, failing or missing runs'),
  coverage: VmCoverageSchema.nullable().describe(
    'null when the API could not be read (no API key or org here, or it failed: a warning says why)',
  ),
})

export const GuardUninstallResultSchema = z.object({
  removed: z.array(GuardEntrySchema),
  guard_key_removed: GuardKeySchema.nullable().describe(
    'for a team guard: its key, removed from the org so that no up adds it any more (the key files stay in the directory); null otherwise, or when it could not be removed (a warning says so)',
  ),
})

export const GuardPrintResultSchema = z.object({
  kind: z.enum(['cron', 'systemd']),
  text: z.string().describe('the crontab lines, or the units one after the other'),
  files: z.array(z.string()).nullable().describe('with --dir: the unit files written there'),
  guard_key: GuardKeySchema.nullable().describe("with --team: the team guard's key, registered with the org; null without --team"),
})

export const GuardCoverageSchema = z
  .object({
    kind: z
      .enum(['cron', 'systemd', 'unknown'])
      .nullable()
      .describe(
        'the guard on this machine that sweeps this directory and profile; null: none; "unknown": the crontab or its files could not be read (a warning says why)',
      ),
    every_seconds: z.number().nullable(),
    last_run_at: z.string().nullable().describe("its last sweep's start; null: none recorded"),
    last_exit_code: z.number().nullable(),
  })
  .describe('whether targon guard covers this config directory and profile here, and how its last sweep went')
export type GuardCoverage = z.infer<typeof GuardCoverageSchema>
