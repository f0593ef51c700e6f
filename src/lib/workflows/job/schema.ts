/**
 * The JSON contract of `targon run` (and the job pieces `targon jobs` shares): the `data` schemas, registered with
 * the others in contract.ts. Only zod here (and the sync's list of reasons), so that contract.ts can import it
 * without a cycle.
 */
import * as z from 'zod'

import {HELD_BACK_KINDS} from '../sync/held-back.js'

export const JOB_STATES = ['running', 'succeeded', 'failed', 'cancelled', 'lost'] as const
export type JobState = (typeof JOB_STATES)[number]

export const JobSchema = z.object({
  id: z.string().describe('the job id, j-<UTC date>-<UTC time>-<random>; the systemd unit on the VM is targon-job-<id>'),
  command: z.string().describe('the command line the remote shell ran'),
  workdir: z.string().describe('the directory on the VM the command ran in (where --out paths are read)'),
  state: z
    .enum(JOB_STATES)
    .describe(
      'running; succeeded (exit code 0); failed (exit_code says which); cancelled (targon jobs cancel, or an interrupted run --down); lost: it ended without an exit code (killed with its unit, or its VM restarted or vanished)',
    ),
  exit_code: z.number().int().nullable().describe("the job's own exit code; null while running, or when it is cancelled or lost"),
  signal: z.string().nullable().describe('for an exit code above 128, the signal that probably ended the command (SIGKILL for 137)'),
  started_at: z.string().nullable().describe('when the job started (ISO 8601, from the VM)'),
  duration_ms: z.number().int().nullable().describe('from its start until it ended, or until now while it runs'),
  down: z.boolean().describe('run --down: the VM is to be deleted once the job has ended'),
})
export type Job = z.infer<typeof JobSchema>

const VmRefSchema = z.object({uid: z.string(), name: z.string().nullable()})

export const SyncResultSchema = z.object({
  local_dir: z.string().describe('the local working directory that was synced'),
  remote_dir: z.string().describe('its directory on the VM: one per local directory, /home/ubuntu/targon/work/<id>'),
  files_sent: z.number().int().nonnegative(),
  bytes_sent: z.number().int().nonnegative(),
  files_removed: z.number().int().nonnegative().describe('files an earlier sync of this directory sent that are gone locally'),
  links_skipped: z.number().int().nonnegative(),
})

export const FetchResultSchema = z.object({
  destination: z.string().nullable().describe('./targon-out/<job>/, where the --out paths were copied; null without --out'),
  copied: z.array(z.string()).describe('the files copied, as paths under the destination'),
  failed: z.array(z.object({path: z.string(), error: z.string()})),
  skipped: z.array(z.object({path: z.string(), reason: z.string()})).describe('links and special files, never followed'),
  bytes: z.number().int().nonnegative(),
})
export type FetchResult = z.infer<typeof FetchResultSchema>

export const JobOutcomeSchema = z.object({
  job: JobSchema,
  vm: VmRefSchema,
  sync: SyncResultSchema.nullable().describe('null with --no-sync'),
  fetch: FetchResultSchema,
  exit_code: z.number().int().nullable().describe("the job's own exit code (as job.exit_code); null when it has none"),
  tail: z.array(z.string()).describe('the last 20 lines of the log, each cut to 4096 characters, control characters escaped'),
  deleted: z
    .array(
      z.object({
        uid: z.string(),
        name: z.string().nullable(),
        action: z.string().describe("as in targon down's results"),
        billing: z.boolean().nullable(),
        hook: z
          .object({status: z.string(), exit_code: z.number().int().nullable(), output_tail: z.string()})
          .nullable()
          .describe("the VM's pre-delete hook, as targon down reports it; null when it has none"),
      }),
    )
    .nullable()
    .describe('with --down: the deletion of the VM after its pre-delete hook (reason job-done); null without'),
})
export type JobOutcome = z.infer<typeof JobOutcomeSchema>

export const JobPlanSchema = z
  .object({
    dry_run: z.literal(true),
    vm: z.string().nullable().describe('the VM or offer as named (null with --gpu); a dry run does not look it up'),
    command: z.string().describe('the command line the remote shell would run'),
    out: z.array(z.string()).describe('the --out paths, as checked'),
    sync: z
      .object({
        local_dir: z.string().describe('the local working directory'),
        remote_dir: z.string().describe('its directory on a VM, /home/ubuntu/targon/work/<id>'),
        files: z
          .array(z.object({path: z.string(), bytes: z.number().int().nonnegative()}))
          .describe("every file the sync would look at, by path; only those the VM's copy differs from are sent"),
        bytes: z.number().int().nonnegative().describe('their size in all'),
        held_back: z
          .array(z.object({path: z.string(), kind: z.enum(HELD_BACK_KINDS), reason: z.string()}))
          .describe(
            "what the sync would not send whatever the ignore rules say: targon's config directory and ~/.ssh (never), what looks like a private key or credentials (unless a .targonignore negation lets it through), links, special files, names with control characters",
          ),
      })
      .nullable()
      .describe('null with --no-sync'),
  })
  .describe('run --dry-run: what the run would sync and start; it rents nothing and connects to nothing')
export type JobPlan = z.infer<typeof JobPlanSchema>

export const ListedJobSchema = JobSchema.extend({
  vm: VmRefSchema,
  down_pending: z.boolean().describe('run --down: the VM is still there, to be deleted once the job has ended (jobs wait or a sweep)'),
})

export const JobsResultSchema = z.object({
  jobs: z.array(ListedJobSchema).describe('oldest first'),
  unreadable: z.array(VmRefSchema.extend({error: z.string()})).describe('VMs of the selection whose jobs could not be read'),
})
export type JobsResult = z.infer<typeof JobsResultSchema>

export const JobLogsResultSchema = z.object({
  job: JobSchema,
  vm: VmRefSchema,
  tail: z.array(z.string()).describe('the last 20 lines shown, each cut to 4096 characters, control characters escaped'),
})
export type JobLogsResult = z.infer<typeof JobLogsResultSchema>

export const JobFetchResultSchema = z.object({job: JobSchema, vm: VmRefSchema, fetch: FetchResultSchema})
export type JobFetchResult = z.infer<typeof JobFetchResultSchema>

export const JobCancelResultSchema = z.object({
  job: JobSchema,
  vm: VmRefSchema,
  cancelled: z.boolean().describe('false when the job had already ended (its state says how)'),
})
export type JobCancelResult = z.infer<typeof JobCancelResultSchema>
