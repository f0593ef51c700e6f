/**
 * The contract of a run's event stream, with the stable names it speaks of: the phases of up and the remote steps
 * of the bootstrap, which `up --json` uses too. Those names are defined here, not in up/ or bootstrap/, because
 * both of those (and what they build on) import the events module: the vocabulary sits below whoever reports in it.
 */
import * as z from 'zod'

/** The phases of up, by the names events and `up --json` use, in the order they start. */
export const PHASES = ['register', 'deploy', 'wait-running', 'install', 'shim-start'] as const
export type PhaseName = (typeof PHASES)[number]

/** What a VM's pre-delete hook did: a deletion result and the deletion event that ends the hook both carry it. */
export const HookOutcomeSchema = z
  .object({
    status: z
      .enum(['ok', 'failed', 'timed-out', 'interrupted', 'unreachable', 'unknown-here'])
      .describe(
        'unreachable: the VM (or its stored hook) could not be reached, so it was deleted without its hook; unknown-here: this config directory has no record of the VM, so whether it has a hook is not known here, and it was deleted without running one',
      ),
    exit_code: z.number().int().nullable().describe('the exit code of the hook on the VM; null when it did not end by itself'),
    duration_ms: z.number().int().nonnegative(),
    output_tail: z
      .string()
      .describe('the last lines of its output (stdout and stderr), at most 20 lines or 4 KiB, control characters removed'),
    detail: z.string().nullable().describe('why it did not succeed, for a person; null when it did'),
  })
  .describe('the pre-delete hook (up --on-delete) run on the VM before its deletion; the deletion went on whatever it did')
export type HookOutcome = z.infer<typeof HookOutcomeSchema>

/** A job of targon run that was running on a VM when down or sweep deleted it: a deletion result and its event name it. */
export const EndedJobSchema = z.object({
  id: z.string().describe('the job id (checked as targon jobs checks it), for targon jobs logs ID'),
  command: z.string().describe('its command line as the VM recorded it, cut to 200 characters (…); untrusted text from the VM'),
})
export type EndedJob = z.infer<typeof EndedJobSchema>

/**
 * The remote steps of the bootstrap, by the stable names that events and `up --json` use (the script's own ids, B0 to
 * S9, stay inside it), in the order they run: install, then shim-start.
 */
export const BOOTSTRAP_STEPS = [
  'marker-check',
  'preflight',
  'quiet-sudo',
  'sshd-forwarding',
  'apt-install',
  'docker-service',
  'nvidia-toolkit',
  'docker-daemon-config',
  'gpu-test',
  'firewall',
  'shim-access',
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
      'run: the command itself; phase and step: a phase of up and a remote bootstrap step; progress: what a phase waits for; warning: what stderr would say; rollback: up deleting what it made; deletion: one VM in down or sweep (started, progress on a wake-up, probe, re-send or its pre-delete hook, then done or failed); exec and transfer: one VM of exec and cp',
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
  hook: HookOutcomeSchema.nullable().describe(
    "on the deletion event (status progress) that ends a VM's pre-delete hook in down or sweep: what the hook did; null elsewhere",
  ),
  ended_jobs: z
    .array(EndedJobSchema)
    .nullable()
    .describe(
      'on the deletion event (status done) of a VM whose deletion ended jobs of targon run that were running on it: those jobs; null elsewhere',
    ),
})
export type RunEvent = z.infer<typeof RunEventSchema>
