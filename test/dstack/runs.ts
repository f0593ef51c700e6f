/**
 * dstack runs as its REST API answers them (dstack 0.21.2): the Run, Job and JobSubmission models
 * (src/dstack/_internal/core/models/runs.py) and how the server fills them (server/services/runs/__init__.py,
 * run_model_to_run, _get_run_status_message; server/services/jobs/__init__.py, job_model_to_job_submission,
 * _get_job_status_message). A run's configuration carries what a scaler reads (resources, fleets, retry, max_price);
 * the rest of a task's configuration is left out.
 */
import {randomUUID} from 'node:crypto'

type Json = Record<string, unknown>

/** RunStatus and JobStatus (core/models/runs.py). */
export type RunStatus = 'done' | 'failed' | 'pending' | 'provisioning' | 'running' | 'submitted' | 'terminated' | 'terminating'
export type JobStatus = 'aborted' | 'done' | 'failed' | 'provisioning' | 'pulling' | 'running' | 'submitted' | 'terminated' | 'terminating'

export const FINISHED_RUN_STATUSES: RunStatus[] = ['terminated', 'failed', 'done']
const FINISHED_JOB_STATUSES: JobStatus[] = ['terminated', 'aborted', 'failed', 'done']

/** jobs_submitted.py, _apply_no_fleet_selection: why a job found no capacity. */
export const NO_FLEET_MESSAGE = 'No matching fleet found. Possible reasons: https://dstack.ai/docs/guides/troubleshooting/#no-fleets'
export const NO_SPECIFIED_FLEET_MESSAGE = 'Failed to use specified fleets'

export interface SimJobSubmission {
  id: string
  submission_num: number
  submitted_at: number
  last_processed_at: number
  status: JobStatus
  termination_reason: string | null
  termination_reason_message: string | null
  /** The host's provisioning data once the job is placed on an instance. */
  job_provisioning_data: Json | null
  /** The instance the job holds (InstanceModel.jobs) until it ends. */
  instanceId?: string
}

export interface SimRun {
  id: string
  name: string
  project: string
  user: string
  submitted_at: number
  last_processed_at: number
  status: RunStatus
  termination_reason: string | null
  fleet: {id: string; name: string} | null
  /** The fleets the configuration names (`fleets: [...]`), or null for any fleet of the project. */
  fleets: string[] | null
  /** `gpu: NAME:COUNT` as dstack normalizes it, or null. */
  gpu: {name: string[]; count: number} | null
  max_price: number | null
  /** retry.duration in seconds with `on_events: [no-capacity]`; null: no retry (a run without capacity fails). */
  retrySeconds: number | null
  submissions: SimJobSubmission[]
}

export function newSubmission(submissionNum: number, at: number): SimJobSubmission {
  return {
    id: randomUUID(),
    job_provisioning_data: null,
    last_processed_at: at,
    status: 'submitted',
    submission_num: submissionNum,
    submitted_at: at,
    termination_reason: null,
    termination_reason_message: null,
  }
}

export const latestSubmission = (run: SimRun): SimJobSubmission => run.submissions.at(-1) as SimJobSubmission

const iso = (ms: number) => new Date(ms).toISOString()

function resources(run: SimRun): Json {
  return {
    cpu: {arch: null, count: {max: null, min: 2}},
    disk: {size: {max: null, min: 102400}},
    gpu: run.gpu
      ? {
          compute_capability: null,
          count: {max: run.gpu.count, min: run.gpu.count},
          memory: null,
          name: run.gpu.name,
          total_memory: null,
          vendor: 'nvidia',
        }
      : {compute_capability: null, count: {max: 0, min: 0}, memory: null, name: null, total_memory: null, vendor: null},
    memory: {max: null, min: 8},
    shm_size: null,
  }
}

const retryOf = (run: SimRun) => (run.retrySeconds === null ? null : {duration: run.retrySeconds, on_events: ['no-capacity']})

function runSpec(run: SimRun): Json {
  return {
    configuration: {
      commands: ['python train.py'],
      fleets: run.fleets?.map((name) => ({name, project: null})) ?? null,
      image: null,
      max_price: run.max_price,
      name: run.name,
      nodes: 1,
      resources: resources(run),
      retry: retryOf(run),
      type: 'task',
    },
    configuration_path: 'task.dstack.yml',
    file_archives: [],
    profile: {name: 'default'},
    repo_code_hash: null,
    repo_data: {repo_type: 'virtual'},
    repo_dir: null,
    repo_id: null,
    run_name: run.name,
    ssh_key_pub: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDstackSimulatorRunKeyDstackSimulatorRunK run',
    working_dir: null,
  }
}

function jobSpec(run: SimRun): Json {
  return {
    commands: ['/bin/bash', '-i', '-c', 'python train.py'],
    env: {},
    image_name: 'dstackai/base:0.11-base-ubuntu22.04',
    job_name: `${run.name}-0-0`,
    job_num: 0,
    jobs_per_replica: 1,
    max_duration: null,
    replica_group: 'default',
    replica_num: 0,
    requirements: {
      backend_options: null,
      max_price: run.max_price,
      multinode: false,
      reservation: null,
      resources: resources(run),
      spot: false,
    },
    retry: retryOf(run),
    ssh_key: null,
  }
}

/** _get_job_status_message. */
function jobStatusMessage(submission: SimJobSubmission): string {
  if (submission.status === 'done') return 'exited (0)'
  if (submission.status === 'failed' && submission.termination_reason === 'failed_to_start_due_to_no_capacity')
    return submission.termination_reason_message?.includes('No matching fleet found') ? 'no fleets' : 'no capacity'
  if (submission.status === 'failed') return 'error'
  if (submission.status === 'terminated' && submission.termination_reason === 'terminated_by_user') return 'stopped'
  return submission.status
}

function submissionView(submission: SimJobSubmission): Json {
  const finished = FINISHED_JOB_STATUSES.includes(submission.status)
  return {
    deployment_num: 0,
    error: null,
    exit_status: null,
    finished_at: finished ? iso(submission.last_processed_at) : null,
    id: submission.id,
    image_pull_progress: null,
    inactivity_secs: null,
    job_provisioning_data: submission.job_provisioning_data,
    job_runtime_data: null,
    last_processed_at: iso(submission.last_processed_at),
    probes: [],
    status: submission.status,
    status_message: jobStatusMessage(submission),
    submission_num: submission.submission_num,
    submitted_at: iso(submission.submitted_at),
    termination_reason: submission.termination_reason,
    termination_reason_message: submission.termination_reason_message,
  }
}

/** _get_run_status_message: `retrying` while a run waits again after a job found no capacity. */
function runStatusMessage(run: SimRun): string {
  const latest = latestSubmission(run)
  if (latest.status === 'pulling') return 'pulling'
  if (['submitted', 'pending'].includes(run.status) && run.retrySeconds !== null) {
    const reason = [...run.submissions].reverse().find((submission) => submission.termination_reason !== null)?.termination_reason
    if (reason === 'failed_to_start_due_to_no_capacity') return 'retrying'
  }

  return run.status
}

/** The Run as runs/list and runs/get answer it (run_model_to_run with return_in_api). */
export function runView(run: SimRun, submissionsLimit = 10): Json {
  const submissions = submissionsLimit === 0 ? [] : run.submissions.slice(-submissionsLimit).map((submission) => submissionView(submission))
  return {
    cost: 0,
    deleted: false,
    deployment_num: 0,
    error: run.termination_reason === 'retry_limit_exceeded' ? 'retry limit exceeded' : null,
    fleet: run.fleet,
    id: run.id,
    jobs: [{job_connection_info: null, job_spec: jobSpec(run), job_submissions: submissions}],
    last_processed_at: iso(run.last_processed_at),
    latest_job_submission: submissions.at(-1) ?? null,
    next_triggered_at: null,
    project_name: run.project,
    run_spec: runSpec(run),
    service: null,
    status: run.status,
    status_message: runStatusMessage(run),
    submitted_at: iso(run.submitted_at),
    termination_reason: run.termination_reason,
    user: run.user,
  }
}
