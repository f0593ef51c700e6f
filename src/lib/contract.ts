/**
 * The JSON contract of every command: the `data` schemas, the pieces they share, and the envelopes
 * around them. Keys are snake_case, like the Targon API's. These schemas are snapshotted as JSON
 * Schema under schemas/ (npm run schemas); a test fails on any unintended change, and the end-to-end
 * tests validate real output against them. Modules build these values; only this file defines them.
 */
import * as z from 'zod'

import {EXIT_CODES, type ErrorCode} from './core/errors.js'

import {CONFIG_KEYS} from './settings/settings.js'
import {JobCancelResultSchema, JobFetchResultSchema, JobLogsResultSchema, JobsResultSchema, RunResultSchema} from './run/schema.js'

export const OFFER_SORTS = ['price', 'gpu', 'available'] as const

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

export const OffersResultSchema = z.object({
  offers: z.array(OfferSchema),
  filters: z.object({
    gpu: z.string().nullable(),
    min_gpus: z.number().nullable(),
    max_price: z.number().nullable(),
    include_sold_out: z.boolean(),
    sort: z.enum(OFFER_SORTS),
  }),
  as_of: z.string().describe('RFC 3339 time of the inventory read'),
})
export type OffersResult = z.infer<typeof OffersResultSchema>

export const PHASES = ['register', 'deploy', 'wait-running', 'install', 'shim-start'] as const
export type PhaseName = (typeof PHASES)[number]

export const ON_FAILURE = ['auto', 'delete', 'keep'] as const
export type OnFailure = (typeof ON_FAILURE)[number]

/**
 * The remote steps of the bootstrap, by the stable names that events and `up --json` use (the script's own ids, B0 to
 * S9, stay inside it), in the order they run: install, then shim-start.
 */
export const BOOTSTRAP_STEPS = [
  'marker-check',
  'preflight',
  'sshd-forwarding',
  'apt-install',
  'docker-service',
  'nvidia-toolkit',
  'docker-daemon-config',
  'gpu-test',
  'firewall',
  'idle-sampler',
  'write-marker',
  'dstack-takeover',
  'shim-binary',
  'shim-home',
  'shim-env',
  'shim-unit',
  'shim-service',
  'shim-marker',
  'shim-health',
] as const
export type BootstrapStep = (typeof BOOTSTRAP_STEPS)[number]

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
  dstack: z.object({shim_version: z.string(), healthy: z.boolean()}).nullable().describe('null with --no-bootstrap or --no-shim'),
  phases: z.array(PhaseResultSchema),
})
export type VmResult = z.infer<typeof VmResultSchema>

/** A registered workload that Targon refused to delete (HTTP 500); it was never deployed and does not run. */
export const LeftoverSchema = z.object({uid: z.string(), name: z.string().nullable(), resource: z.string().nullable()})
export type Leftover = z.infer<typeof LeftoverSchema>

export const DELETE_ACTIONS = [
  'deleted',
  'woken-and-deleted',
  'already-gone',
  'left-registered',
  'would-delete',
  'not-attempted',
  'failed',
  'still-present',
  'invalid-answer',
] as const
export type DeleteAction = (typeof DELETE_ACTIONS)[number]

export const DELETE_REASONS = ['ttl', 'idle', 'max-cost', 'over-cost', 'down', 'job-done'] as const
export type DeleteReason = (typeof DELETE_REASONS)[number]

export const HookOutcomeSchema = z
  .object({
    status: z
      .enum(['ok', 'failed', 'timed-out', 'interrupted', 'unreachable'])
      .describe('unreachable: the VM (or its stored hook) could not be reached, so it was deleted without its hook'),
    exit_code: z.number().int().nullable().describe('the exit code of the hook on the VM; null when it did not end by itself'),
    duration_ms: z.number().int().nonnegative(),
    output_tail: z
      .string()
      .describe('the last lines of its output (stdout and stderr), at most 20 lines or 4 KiB, control characters removed'),
    detail: z.string().nullable().describe('why it did not succeed, for a person; null when it did'),
  })
  .describe('the pre-delete hook (up --on-delete) run on the VM before its deletion; the deletion went on whatever it did')
export type HookOutcome = z.infer<typeof HookOutcomeSchema>

export const DeleteResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  action: z
    .enum(DELETE_ACTIONS)
    .describe(
      'woken-and-deleted: suspended or crashed, so deployed first, then deleted; left-registered: never deployed, Targon refuses to delete it, it does not run; invalid-answer: a listed item that failed the checks of the API answer (it may bill; name its exact uid to delete it)',
    ),
  billing: z.boolean().nullable().describe('whether it still costs money; null: not known'),
  error: z.string().optional(),
  hook: HookOutcomeSchema.optional().describe(
    'present when the VM has a pre-delete hook and down or sweep tried to run it (not under --dry-run or --no-hooks)',
  ),
})
export type DeleteResult = z.infer<typeof DeleteResultSchema>

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

export const USAGE_STATES = ['idle', 'busy', 'unreadable'] as const

export const UsageSchema = z.object({
  state: z.enum(USAGE_STATES).describe('unreadable: the idle clock could not be read; such a VM is never deleted for idleness'),
  idle_seconds: z.number().nullable().describe("idle up to the last sample, by the VM's own clock; null when unreadable"),
  idle_limit_seconds: z.number().nullable().describe("the VM's own limit (up --idle), else down --idle-limit; null: none"),
  idle_reason: z.string().describe('why it is idle, busy or unreadable'),
  idle_hold_until: z
    .string()
    .optional()
    .describe('idle past its limit, but its idle deletion is held off on the VM (targon extend) until about then'),
  gpus: z.array(z.object({index: z.number(), util_pct: z.number(), mem_used_mib: z.number(), mem_total_mib: z.number()})).nullable(),
  ssh_sessions: z.number().nullable().describe('SSH sessions with a terminal or a command, targon probes not counted'),
  tunnels: z
    .number()
    .nullable()
    .describe("SSH sessions without a terminal (port-forwards), the dstack server's tunnel to the shim not counted"),
  dstack_tasks: z.array(z.object({id: z.string(), status: z.string()})).nullable(),
  containers: z.array(z.string()).nullable().describe('running containers, when up --idle-containers counts them'),
})
export type Usage = z.infer<typeof UsageSchema>

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

export const DstackFleetSchema = z.object({
  name: z.string(),
  yaml: z.string().describe('the fleet file, ready for dstack apply -f'),
  hosts: z.array(z.object({hostname: z.string(), port: z.number(), uid: z.string(), name: z.string().nullable()})),
  shared_ips: z.array(z.string()).describe('public IPs used by more than one VM (see the shared-IP caveat)'),
})
export type DstackFleet = z.infer<typeof DstackFleetSchema>

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
  max_cost_usd: z.number().nullable().describe('the budget of up --max-cost (local); null: none'),
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
    .describe('false: its owner was not read (no owner set and no --any-owner, and the listing has no project_id) or could not be'),
  local_record: z.enum(['present', 'missing']),
  idle_seconds: z.number().nullable().describe('with --usage: how long it has been idle; null without --usage or when unreadable'),
  idle_reason: z.string().nullable().describe('with --usage: why it is idle, busy or unreadable; null without --usage'),
  usage: UsageSchema.nullable().describe('with --usage, for running VMs: what its idle clock and a live sample say; null otherwise'),
  ends_by: z
    .string()
    .describe(
      'what ends it and when, for a person: "TTL 14:05Z", "idle 12m/30m" (idle time with --usage, else ?), "cost 4.10/5.00", joined by ", "; "no limit"',
    ),
})
export type StatusVm = z.infer<typeof StatusVmSchema>

export const StatusResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('null with --all-fleets'),
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
  guard: z
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
    .describe('whether targon guard covers this config directory and profile here, and how its last sweep went'),
})
export type StatusResult = z.infer<typeof StatusResultSchema>

const HostKeySchema = z
  .object({fingerprint: z.string(), new: z.boolean().describe('pinned by this run, on first contact')})
  .describe('the pinned host key')

export const SshResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  host: z.string(),
  port: z.number(),
  user: z.literal('ubuntu'),
  identity_file: z.string(),
  known_hosts_file: z.string(),
  host_key_alias: z.string(),
  host_key: HostKeySchema,
  argv: z.array(z.string()).describe('the OpenSSH command line, ready to exec'),
})
export type SshResult = z.infer<typeof SshResultSchema>

export const SshConfigResultSchema = z.object({
  fleet: z.string(),
  hosts: z.array(SshResultSchema),
  config: z.string().describe('Host entries for ~/.ssh/config or an Include'),
})

export const LogsResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  fleet: z.string().nullable(),
  status: z.string().describe('as the API says when the log was read'),
  type: z.literal('serial').describe("the VM's serial console"),
  tail: z.number().nullable().describe('--tail: at most this many of the last lines; null: the whole log the API keeps'),
  lines: z.array(z.string()).describe('console lines, oldest first, without line ends'),
})
export type LogsResult = z.infer<typeof LogsResultSchema>

export const ExecVmResultSchema = z.object({
  name: z.string(),
  uid: z.string(),
  exit_code: z.number().nullable().describe('the remote exit code; null: the command could not run (see error)'),
  duration_ms: z.number(),
  error: z.string().nullable().describe('why the command could not run or was cut short'),
  tail: z.array(z.string()).describe('the last lines of output, stdout and stderr as they came'),
  host_key: HostKeySchema.nullable().describe('the pinned host key; null: no SSH connection was made'),
})
export type ExecVmResult = z.infer<typeof ExecVmResultSchema>

export const ExecResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('null when VMs were named with --vms'),
  command: z.string(),
  results: z.array(ExecVmResultSchema),
})
export type ExecResult = z.infer<typeof ExecResultSchema>

export const COPY_DIRECTIONS = ['upload', 'download'] as const

export const CopyVmResultSchema = z.object({
  vm: z.string().describe('the VM name (its uid when it has none)'),
  uid: z.string(),
  direction: z.enum(COPY_DIRECTIONS),
  source: z.string(),
  destination: z.string().nullable().describe('where the copied file or directory went; null when that was never decided'),
  files: z.number().describe('files copied whole'),
  planned_files: z.number().describe('regular files found in the source'),
  bytes: z.number().describe('bytes of the files copied whole'),
  duration_ms: z.number(),
  ok: z.boolean().describe('true only when every file was copied and nothing was refused'),
  error: z.string().nullable().describe('why this VM failed: SSH, a missing path, or a count of the files that failed'),
  host_key: HostKeySchema.nullable().describe('the pinned host key; null: no SSH connection was made'),
  copied: z.array(z.string()).describe('files copied, as <name>/<path> under the copied root'),
  failed: z
    .array(z.object({path: z.string(), error: z.string()}))
    .describe('files and directories not copied, and listing entries refused (a name with "/", "..")'),
  skipped: z
    .array(z.object({path: z.string(), reason: z.string()}))
    .describe('symbolic links and special files in the tree: never followed nor copied'),
})
export type CopyVmResult = z.infer<typeof CopyVmResultSchema>

export const CopyResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('the fleet of ":PATH" without --vms; null when VMs were named'),
  direction: z.enum(COPY_DIRECTIONS),
  source: z.string(),
  destination: z.string(),
  results: z.array(CopyVmResultSchema),
})
export type CopyResult = z.infer<typeof CopyResultSchema>

export const ConfigResultSchema = z.object({
  path: z.string(),
  profile: z.string().describe('the profile shown or changed; "default" is the top-level keys of the file'),
  values: z
    .object(Object.fromEntries(CONFIG_KEYS.map((key) => [configJsonKey(key), z.string().nullable().optional()])))
    .describe('by setting, null when unset; api_key is masked'),
})
export type ConfigResult = z.infer<typeof ConfigResultSchema>

export const ConfigListResultSchema = ConfigResultSchema.extend({
  profiles: z.array(z.string()).describe('every profile of the file, "default" first'),
  active: z
    .object({name: z.string(), by: z.string().describe('--profile, TARGON_PROFILE, targon config use, or the default')})
    .describe('the profile a run without --profile uses now'),
})
export type ConfigListResult = z.infer<typeof ConfigListResultSchema>

export const ConfigProfileResultSchema = z.object({
  path: z.string(),
  profile: z.string().describe('the profile chosen or removed'),
  profiles: z.array(z.string()).describe('every profile of the file afterwards, "default" first'),
})
export type ConfigProfileResult = z.infer<typeof ConfigProfileResultSchema>

/** The JSON name of a setting: api-key → api_key. */
export function configJsonKey(key: string): string {
  return key.replaceAll('-', '_')
}

export const COST_GROUPINGS = ['day', 'fleet', 'resource', 'vm'] as const
export type CostGrouping = (typeof COST_GROUPINGS)[number]

/**
 * Where a VM's billing start comes from (`start_source`): the deploy this directory saw accepted, or the API's
 * created_at of a VM a listing found. Also the spend ledger's on-disk values: never renamed, only added to.
 */
export const BILLING_START_SOURCES = ['deploy', 'wake-registered', 'api-created', 'first-seen'] as const
/**
 * How a VM's billing end is known (`end_source`): a deletion confirmed here, a tombstone's updated_at, or the last time
 * it was seen billing. Also the spend ledger's on-disk values: never renamed, only added to.
 */
export const BILLING_END_SOURCES = ['deleted', 'tombstone', 'last-seen'] as const

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
      'deleted: a deletion confirmed from this directory; tombstone: the updated_at of the deleted record Targon still listed; last-seen: not confirmed, the last time this directory saw it (see bounded); open: it still bills',
    ),
  bounded: z
    .boolean()
    .describe(
      'true when the end was not confirmed: it is the last sighting (billing, or the last change of its error record), and billing stopped around then, before `found_gone_at`',
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

export const ReconcileSchema = z.object({
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
export type Reconcile = z.infer<typeof ReconcileSchema>

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
  reconcile: ReconcileSchema.nullable().describe('with --reconcile'),
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
  }),
  results: z
    .array(DeleteResultSchema.extend({reason: z.enum(SWEEP_REASONS).describe('the limit it reached')}))
    .describe('each VM past a limit, deleted (or, with --dry-run, that would be)'),
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
        extend_command: z.string().describe('the command that postpones it'),
      }),
    )
    .describe('with --warn: the limits that fire within the window, warned about now (each VM and deadline once)'),
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
      max_cost_usd: z.number().nullable().describe('the budget now'),
      budget_ends_at: z.string().nullable().describe('when the estimate reaches the budget, at the current price'),
    }),
  ),
})
export type ExtendResult = z.infer<typeof ExtendResultSchema>

export const GuardRunSchema = z.object({
  at: z.string().describe('when the sweep started, RFC 3339'),
  exit_code: z.number(),
  duration_ms: z.number(),
  deleted: z.number().describe('VMs it deleted'),
  still_billing: z.number().describe('VMs selected that still bill after it'),
  skipped: z.boolean().describe('another sweep was running: it did nothing'),
})
export type GuardRun = z.infer<typeof GuardRunSchema>

export const GuardEntrySchema = z.object({
  kind: z.enum(['cron', 'systemd']),
  config_dir: z.string(),
  profile: z.string(),
  org: z.string(),
  owner: z.string().nullable(),
  every_seconds: z.number().nullable().describe('the period of its schedule; null when the entry was edited into another'),
  node: z.string().nullable().describe('the absolute path of node that it runs'),
  cli: z.string().nullable().describe('the absolute path of the CLI that it runs'),
  files: z.array(z.string()).nullable().describe('systemd: its service and timer files; null for cron (the user crontab)'),
})
export type GuardEntry = z.infer<typeof GuardEntrySchema>

export const GuardInstallResultSchema = z.object({
  installed: GuardEntrySchema,
  replaced: z.boolean().describe('a guard of this directory and profile was there and was replaced'),
  enabled: z
    .boolean()
    .nullable()
    .describe('systemd: whether systemctl enabled the timer (false: the units are written, enable them by hand); null for cron'),
  log: z.string().describe("where the sweeps' output goes (rotated past 1 MiB)"),
})

export const GuardStatusResultSchema = z.object({
  config_dir: z.string(),
  profile: z.string(),
  guards: z.array(GuardEntrySchema).describe('what is installed for this directory and profile (cron, systemd, or none)'),
  last_runs: z.array(GuardRunSchema).describe('the last runs, newest last'),
  next_run_at: z.string().nullable().describe('by the schedule and this clock; null when nothing is installed'),
  log: z.string(),
  problems: z.array(z.string()).describe('what stops the guard from working: a missing node or CLI, failing or missing runs'),
})

export const GuardUninstallResultSchema = z.object({removed: z.array(GuardEntrySchema)})

export const GuardPrintResultSchema = z.object({
  kind: z.enum(['cron', 'systemd']),
  text: z.string().describe('the crontab lines, or the units one after the other'),
  files: z.array(z.string()).nullable().describe('with --dir: the unit files written there'),
})

/**
 * One event of a run's event stream (--events ndjson, --events-file): what a workflow did, as it happened. Every
 * event carries the same fields; those that do not apply are null. Versioned apart from the envelopes.
 */
export const EVENT_VERSION = 2

export const EVENT_TYPES = ['run', 'phase', 'step', 'progress', 'warning', 'rollback', 'deletion', 'exec', 'transfer'] as const

export const EVENT_STATUSES = ['started', 'progress', 'done', 'skipped', 'failed', 'warning'] as const

export const RunEventSchema = z.object({
  event_version: z.literal(EVENT_VERSION),
  time: z.string().describe('RFC 3339 with milliseconds, when it happened'),
  run: z.string().describe('the run id, the same on every event of one run'),
  command: z.string(),
  type: z
    .enum(EVENT_TYPES)
    .describe(
      'run: the command itself; phase and step: a phase of up and a remote bootstrap step; progress: what a phase waits for; warning: what stderr would say; rollback: up deleting what it made; deletion: one VM in down (started, progress on a wake-up, probe or re-send, then done or failed); exec and transfer: one VM of exec and cp',
    ),
  vm: z
    .object({
      index: z.number().nullable().describe('1-based position of the VM in an up run; null elsewhere'),
      uid: z.string().nullable(),
      name: z.string().nullable(),
    })
    .nullable()
    .describe('null for events of the whole run'),
  phase: z.enum(PHASES).nullable().describe('the up phase the event belongs to'),
  step: z
    .enum(BOOTSTRAP_STEPS)
    .nullable()
    .describe('the remote bootstrap step, by its stable name (e.g. apt-install, shim-health); each starts at most once per VM'),
  status: z.enum(EVENT_STATUSES),
  duration_ms: z.number().nullable().describe('on the end of a run, phase, step or VM'),
  detail: z.string().nullable().describe("for a person: what happened, free text; a step's started event carries its title"),
  error: z
    .object({code: z.string(), message: z.string(), hint: z.string().nullable()})
    .nullable()
    .describe('on status failed: the error code of the exit-code table, and the fix'),
})
export type RunEvent = z.infer<typeof RunEventSchema>

export const VersionResultSchema = z.object({
  version: z.string().describe('the version of targon (package targon-fleet)'),
  node: z.string().describe('the version of Node.js it runs on'),
  platform: z.string().describe('operating system and CPU, e.g. linux-x64'),
})
export type VersionResult = z.infer<typeof VersionResultSchema>

export const DATA_SCHEMAS = {
  'config get': ConfigResultSchema,
  'config list': ConfigListResultSchema,
  'config remove': ConfigProfileResultSchema,
  'config set': ConfigResultSchema,
  'config unset': ConfigResultSchema,
  'config use': ConfigProfileResultSchema,
  cost: CostResultSchema,
  cp: CopyResultSchema,
  credits: CreditsResultSchema,
  down: DownResultSchema,
  exec: ExecResultSchema,
  extend: ExtendResultSchema,
  'guard install': GuardInstallResultSchema,
  'guard print': GuardPrintResultSchema,
  'guard status': GuardStatusResultSchema,
  'guard uninstall': GuardUninstallResultSchema,
  jobs: JobsResultSchema,
  'jobs cancel': JobCancelResultSchema,
  'jobs fetch': JobFetchResultSchema,
  'jobs logs': JobLogsResultSchema,
  'jobs wait': RunResultSchema,
  logs: LogsResultSchema,
  offers: OffersResultSchema,
  run: RunResultSchema,
  ssh: z.union([SshResultSchema, SshConfigResultSchema]),
  status: StatusResultSchema,
  sweep: SweepResultSchema,
  up: z.union([UpResultSchema, UpPlanSchema]),
  version: VersionResultSchema,
} as const

export type CommandId = keyof typeof DATA_SCHEMAS

/**
 * The `schema_version` of each command's success envelope, 1 unless listed: raised when its `data` changes in a way a
 * script would notice (a field renamed or removed), and the change written in docs/json-contract-changes.md. The
 * error envelope, the same on every command, has a version of its own.
 */
const SCHEMA_VERSIONS: Partial<Record<CommandId, number>> = {cost: 2, credits: 2, status: 2, up: 2}
export const ERROR_SCHEMA_VERSION = 1

export function schemaVersion(command: string): number {
  return SCHEMA_VERSIONS[command as CommandId] ?? 1
}

/** What a command's run returns: its `data`, as its schema says. */
export type CommandResult<Id extends CommandId> = z.infer<(typeof DATA_SCHEMAS)[Id]>

/** Every envelope says which account the run acted on. */
const ACTING = {
  org: z
    .string()
    .nullable()
    .describe('the org the command acted on; null where none applies (offers, config, or a failure before it was known)'),
  profile: z.string().nullable().describe('the profile of the config file whose settings the run used; null where none applies'),
}

export const ErrorEnvelopeSchema = z.object({
  schema_version: z.literal(ERROR_SCHEMA_VERSION),
  ok: z.literal(false),
  command: z.string(),
  ...ACTING,
  error: z.object({
    code: z.enum(Object.keys(EXIT_CODES) as [ErrorCode, ...ErrorCode[]]).describe(
      'machine code; each has one exit code: ' +
        Object.entries(EXIT_CODES)
          .map(([code, exit]) => `${code} ${exit}`)
          .join(', '),
    ),
    exit_code: z
      .number()
      .describe(
        'as in the exit-code table of docs/guides/scripting.md; INTERRUPTED is 128 + the signal number: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM',
      ),
    message: z.string(),
    hint: z.string().nullable(),
    http_status: z.number().nullable(),
    reason: z.string().nullable().describe("the API's reason code"),
    request_id: z.string().nullable(),
    resource: z.object({uid: z.string().optional(), name: z.string().optional()}).nullable(),
    details: z.record(z.string(), z.unknown()),
  }),
  data: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('partial results or the clean-up outcome; for RUNWAY_SHORT, the whole result of targon credits'),
  warnings: z.array(z.string()).describe('what the run noticed before it failed, as on stderr without --json'),
})
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>

export function successEnvelope<T extends z.ZodType>(command: string, data: T) {
  return z.object({
    schema_version: z.literal(schemaVersion(command)),
    ok: z.literal(true),
    command: z.literal(command),
    ...ACTING,
    data,
    warnings: z.array(z.string()),
  })
}

/** JSON Schema documents, by file name under schemas/. */
export function jsonSchemas(): Record<string, unknown> {
  const files: Record<string, unknown> = {'error.json': z.toJSONSchema(ErrorEnvelopeSchema), 'events.json': z.toJSONSchema(RunEventSchema)}
  for (const [command, schema] of Object.entries(DATA_SCHEMAS)) {
    files[`${command.replace(' ', '-')}.json`] = z.toJSONSchema(successEnvelope(command, schema))
  }

  return files
}
