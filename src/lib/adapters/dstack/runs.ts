/**
 * What targon reads of dstack's runs (dstack 0.21.2, core/models/runs.py: Run, JobSubmission, RunSpec; the list
 * request of server/schemas/runs.py): only the fields that say whether a run waits for capacity, and where it may run.
 */
import * as z from 'zod'

/** run_spec.configuration.fleets: names, or references with a name. */
const FleetRefSchema = z.union([z.string().max(64), z.looseObject({name: z.string().max(64)})])

export const DstackJobSubmissionSchema = z.looseObject({
  status: z.string().max(40),
  submitted_at: z.string().max(40),
  termination_reason: z.string().max(80).nullable().optional(),
})

export const DstackRunSchema = z.looseObject({
  id: z.string().max(64),
  status: z.string().max(40),
  /** `retrying` while the run waits again after a job found no capacity (_get_run_status_message). */
  status_message: z.string().max(80).optional(),
  run_spec: z.looseObject({
    run_name: z.string().max(100).nullable().optional(),
    configuration: z.looseObject({fleets: z.array(FleetRefSchema).max(1000).nullable().optional()}),
  }),
  latest_job_submission: DstackJobSubmissionSchema.nullable().optional(),
})
export type DstackRun = z.infer<typeof DstackRunSchema>

/** ListRunsRequest's largest page. */
export const RUNS_PAGE = 100

/** The newest active runs of one project (one page), each with its latest job submission only (it needs the jobs). */
export function activeRunsRequest(project: string): unknown {
  return {include_jobs: true, job_submissions_limit: 1, limit: RUNS_PAGE, only_active: true, project_name: project}
}
