/** The JSON contract of targon up: the VMs it made and what failed, or with --dry-run what it would rent. */
import * as z from 'zod'

import {DeleteResultSchema} from '../../domain/deletion/schema.js'
import {BOOTSTRAP_STEPS, PHASES} from '../../adapters/events/schema.js'
import {OfferSchema} from '../../domain/offers/schema.js'
import {GuardKeySchema} from '../../adapters/ssh/guard-keys.js'
import {DstackSyncResultSchema} from '../dstack/schema.js'

export const ON_FAILURE = ['auto', 'delete', 'keep'] as const
export type OnFailure = (typeof ON_FAILURE)[number]

export const StepResultSchema = z.object({
  id: z.enum(BOOTSTRAP_STEPS).describe('the bootstrap step, by its stable name, e.g. apt-install'),
  title: z.string(),
  status: z.enum(['done', 'skipped', 'failed']),
  duration_ms: z.number(),
  detail: z.string(),
})
export type StepResult = z.infer<typeof StepResultSchema>

export const PhaseResultSchema = z.object({
  name: z.enum(PHASES),
  status: z.enum(['done', 'skipped', 'failed']),
  started_ms: z
    .number()
    .describe(
      'when the phase started, in ms since the run started. Phases may overlap: wait-running ends when the state says running, while install starts at the first SSH attempt, as soon as the state carries an address',
    ),
  duration_ms: z.number(),
  steps: z.array(StepResultSchema).describe('the remote steps of install and shim-start, in order; empty for the other phases'),
})
export type PhaseResult = z.infer<typeof PhaseResultSchema>

export const VmResultSchema = z.object({
  uid: z.string(),
  name: z.string(),
  fleet: z.string(),
  resource: z.string(),
  gpu_model: z.string().nullable(),
  gpu_count: z.number().nullable(),
  status: z.string(),
  price_per_hour: z.number().describe('USD per hour for the whole VM, as the server reports it'),
  max_price: z.number().nullable().describe('the price cap; null when up --name adopted a VM without one'),
  max_cost_usd: z.number().nullable().describe('up --max-cost: the budget in USD, kept locally and enforced by targon down --expired'),
  public_ip: z.string().nullable(),
  ssh_port: z.number().nullable(),
  user: z.literal('ubuntu'),
  identity_file: z.string(),
  created_at: z.string().nullable(),
  ttl_expires_at: z.string().nullable(),
  adopted: z.boolean().describe('true when an existing VM of the fleet was taken over (--name)'),
  host_key_fingerprint: z.string().nullable().describe('OpenSSH SHA256 fingerprint of the pinned host key'),
  bootstrap: z
    .object({
      script_version: z.string().nullable(),
      docker_version: z.string().nullable(),
      nvidia_ctk_version: z.string().nullable(),
      driver_version: z.string().nullable(),
      gpus: z.object({name: z.string().nullable(), count: z.number().nullable()}),
      gpu_check: z
        .enum(['container', 'runtime'])
        .nullable()
        .describe(
          'the GPU check that passed: "container" (nvidia-smi in a container), "runtime" (nvidia-container-cli, when the test image could not be pulled); null when skipped',
        ),
    })
    .nullable()
    .describe('null with --no-bootstrap'),
  dstack: z
    .object({
      shim_version: z.string(),
      healthy: z.boolean(),
      managed_by: z
        .enum(['targon', 'dstack-managed'])
        .describe(
          'who manages the shim: "targon" installed and configured it; "dstack-managed": a dstack server took the host over (or runs a task on it), and its shim, shim.env and unit were left as they are, never restarted (up --force-shim takes it back when no task runs)',
        ),
      dstack_sign: z.string().nullable().describe('with dstack-managed: the first sign that dstack owns the host; null otherwise'),
    })
    .nullable()
    .describe('null with --no-bootstrap or --no-shim'),
  phases: z.array(PhaseResultSchema),
})
export type VmResult = z.infer<typeof VmResultSchema>

/** A registered workload that Targon refused to delete (HTTP 500); it was never deployed and does not run. */
export const LeftoverSchema = z.object({uid: z.string(), name: z.string().nullable(), resource: z.string().nullable()})
export type Leftover = z.infer<typeof LeftoverSchema>

export const FailedVmSchema = z.object({
  name: z.string().nullable(),
  uid: z.string().nullable(),
  error: z.object({code: z.string(), message: z.string()}),
})

export const CleanupSchema = z.object({
  attempted: z.boolean(),
  results: z.array(DeleteResultSchema),
  survivors: z.array(z.string()).describe('uids still billing after clean-up'),
})
export type Cleanup = z.infer<typeof CleanupSchema>

export const UpResultSchema = z.object({
  org: z.string(),
  owner: z
    .string()
    .nullable()
    .describe('the owner the VMs were rented for in a shared org (config key owner, TARGON_OWNER); null: none is set'),
  vms: z.array(VmResultSchema),
  failed: z.array(FailedVmSchema).describe('VMs that failed; with --min the rest of the fleet was kept'),
  cleanup: CleanupSchema.nullable(),
  leftovers: z
    .array(LeftoverSchema)
    .describe('registered workloads Targon refused to delete after a refused deploy; they do not run; targon down retries them'),
  capacity_wait_s: z.number().describe('seconds during which VMs of this run waited for capacity (--wait); 0 when none had to'),
  guard_keys: z
    .array(GuardKeySchema)
    .describe(
      "the team guards' keys (guard install --team) this run adds to each VM it creates, so that the org's team guard can reach them and enforce their limits; empty: no team guard covers them (none is registered, or the org's keys could not be listed: a warning says so)",
    ),
  dstack_sync: DstackSyncResultSchema.nullable()
    .optional()
    .describe(
      'with --dstack: the sync of dstack fleet targon-<fleet> once the VMs were ready, as targon dstack sync reports it; null when it failed or no dstack server is configured (a warning says why; the VMs stay); absent without --dstack',
    ),
})
export type UpResult = z.infer<typeof UpResultSchema>

export const UpPlanSchema = z
  .object({
    dry_run: z.literal(true),
    org: z.string(),
    owner: z.string().nullable().describe('the owner the VMs would be rented for (config key owner, TARGON_OWNER); null: none is set'),
    fleet: z.string(),
    count: z.number(),
    min: z.number().nullable().describe('--min: the fewest VMs the run would keep; null: all or nothing'),
    max_price: z.number().nullable().describe('the price cap per VM in USD per hour; null when up --name adopts without one'),
    vms: z
      .array(
        z.object({
          index: z.number().describe('1 for the first VM of the run'),
          name: z.string().nullable().describe('the name it would get: known with --name; null when it is generated at create'),
          offer: OfferSchema.nullable().describe('the offer it would be rented on, the cheapest with capacity left; null: none has'),
        }),
      )
      .describe('what each VM of --count would be rented on, in order'),
    price_per_hour: z.number().describe('USD per hour of the VMs that have an offer, in all'),
    candidates: z.array(OfferSchema).describe('every offer at or under the cap with capacity, cheapest first (the ones tried in turn)'),
    limits: z.object({
      timeout_seconds: z.number().describe('--timeout: the bound of the run (register to shim-start)'),
      wait_seconds: z.number().nullable().describe('--wait: how long VMs would wait for capacity; null: they would not'),
      ttl_seconds: z.number().nullable().describe('--ttl: after this, targon down --expired deletes the VMs; null: none'),
      max_cost_usd: z.number().nullable().describe('--max-cost: the budget per VM; null: none'),
      idle_limit_seconds: z.number().nullable().describe("--idle: the VMs' own idle limit; null: none"),
      on_failure: z.enum(ON_FAILURE),
      bootstrap: z.boolean().describe('false with --no-bootstrap'),
      shim: z.boolean().describe('whether dstack-shim would be started'),
    }),
  })
  .describe('up --dry-run: what the run would rent; it creates, registers and deploys nothing')
export type UpPlan = z.infer<typeof UpPlanSchema>
