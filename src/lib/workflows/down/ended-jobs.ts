/**
 * What a deletion by down or sweep ends: the jobs of targon run still running on each VM, read just before its DELETE
 * (after its hook) so that the result can name them. Optional by design: bounded in time, and a VM not read is null,
 * never kept or held back longer.
 */
import type {EndedJob} from '../../adapters/events/schema.js'
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import {countOf, oneLine} from '../../core/output.js'
import type {DeleteTarget, DeletionEvent} from '../../domain/deletion/delete-workloads.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {DeletionRun} from '../run-context.js'

/** Reads the jobs running on one VM; the signal ends the reading (time out, or an interrupt). */
export type RunningJobsReader = (vm: KnownVm, signal: AbortSignal) => Promise<EndedJob[]>

/** How long reading the running jobs of the VMs about to be deleted may hold their deletions back (per batch). */
const RUNNING_JOBS_MS = 15_000

/**
 * The jobs of targon run running on each of these VMs (those not running have none), `parallel` at once, within
 * RUNNING_JOBS_MS in all (`boundMs`, for tests): a VM not read in time, or unreachable, is null (unknown) and said in
 * a warning; a signal ends the reading at once. Nothing here keeps a VM or delays its deletion longer.
 */
export async function readRunningJobs(
  run: DeletionRun,
  vms: KnownVm[],
  options: {parallel: number; runningJobs?: RunningJobsReader; boundMs?: number},
): Promise<Map<string, EndedJob[] | null>> {
  const read = options.runningJobs
  const running = vms.filter((vm) => vm.status === 'running')
  if (!read || running.length === 0) return new Map()
  const within = AbortSignal.any([run.signal, AbortSignal.timeout(options.boundMs ?? RUNNING_JOBS_MS)])
  const late = new Promise<string>((resolve) => {
    if (within.aborted) resolve('not read in time')
    else within.addEventListener('abort', () => resolve(run.signal.aborted ? 'interrupted' : 'not read in time'), {once: true})
  })
  // The VMs not read, by why: one reason (no project key here, say) is said once, not once per VM.
  const unread = new Map<string, string[]>()
  const jobs = await mapBounded(running, options.parallel, async (vm) => {
    const outcome = await Promise.race([read(vm, within).catch((error: unknown) => asTargonError(error).message), late])
    if (Array.isArray(outcome)) return outcome
    unread.set(outcome, [...(unread.get(outcome) ?? []), vm.name ?? vm.uid])
    return null
  })
  const count = [...unread.values()].flat().length
  if (count > 0 && !run.signal.aborted)
    run.warn(
      `the jobs of ${countOf(count, 'VM')} could not be read (${[...unread].map(([why, vms]) => `${vms.join(', ')}: ${why}`).join('; ')}); each is deleted all the same, and its result's ended_jobs is null`,
    )
  return new Map(running.map((vm, index) => [vm.uid, jobs[index] ?? null]))
}

/**
 * The jobs a deletion ended, for a person: "ended job ID (COMMAND), …", one printable line; '' when none or unknown
 * (VMs whose jobs could not be read are said in one warning, not a line each).
 */
export function endedJobsInWords(jobs: EndedJob[] | null | undefined): string {
  if (!jobs || jobs.length === 0) return ''
  return `ended ${jobs.map((job) => `job ${job.id} (${oneLine(job.command)})`).join(', ')}`
}

/**
 * What each deletion of a run ends, by uid: the jobs of targon run read on its VM just before it (after its hook),
 * once, said in its result (ended_jobs) and in the event of its end. A VM its idle probe just judged idle runs no job
 * (a running job is activity to the sampler): it is not read again.
 */
export function endedJobsOf(
  run: DeletionRun,
  targets: DeleteTarget[],
  idleUids: Iterable<string>,
  options: {parallel: number; runningJobs?: RunningJobsReader},
) {
  const ended = new Map<string, EndedJob[] | null>()
  for (const uid of idleUids) ended.set(uid, [])
  const statusOf = new Map(targets.map((target) => [target.uid, target.status]))
  return {
    /** Reads the jobs of those of these VMs not read yet. */
    read: async (vms: KnownVm[]): Promise<void> => {
      const unread = vms.filter((vm) => !ended.has(vm.uid))
      for (const [uid, jobs] of await readRunningJobs(run, unread, options)) ended.set(uid, jobs)
    },
    inResult: (result: DeleteResult): DeleteResult => {
      if (!options.runningJobs) return result
      const status = statusOf.get(result.uid)
      // A VM that was not running has no job of targon run: its units do not outlive it.
      const jobs = ended.has(result.uid) ? (ended.get(result.uid) ?? null) : status === undefined || status === 'running' ? null : []
      return {...result, ended_jobs: jobs}
    },
    inEvent: (event: DeletionEvent): DeletionEvent => {
      const jobs = event.status === 'done' && event.vm.uid !== null ? ended.get(event.vm.uid) : undefined
      return jobs && jobs.length > 0 ? {...event, detail: `${event.detail}; ${endedJobsInWords(jobs)}`, ended_jobs: jobs} : event
    },
  }
}

export type EndedJobs = ReturnType<typeof endedJobsOf>
