/**
 * `targon jobs`: the jobs of the VMs in the selection, read on the VMs themselves (so any directory that holds the
 * project key sees them), and the one job an id names, with an open session to its VM and its record: the one kept
 * here when it was started from here (job-store.ts), for what the VM says of the job is the VM's to forge.
 */
import {TargonError, asTargonError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import {type VmReach, fanOut, openVm} from '../../domain/fleet/fan-out.js'
import {type VmSelection, selectVms} from '../select-vms.js'
import type {ListingRun} from '../../domain/fleet/run.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {type EndState, type ListedJob, type JobRecord, listScript, parseListing, signalName} from './job.js'
import {localJobRecord} from './job-store.js'
import type {Job, JobsResult} from './schema.js'

/** VMs read at once. */
const PARALLEL = 8
/** What a listing may print: every job's record at its bound would be far more than anyone keeps on a VM. */
const MAX_LISTING_BYTES = 4 * 1024 * 1024

/** The VMs searched, and the run's clock, warnings and history reads (its listings spend them). */
export interface JobsOptions extends VmSelection, ListingRun, VmReach {
  signal?: AbortSignal
  info?: (message: string) => void
}

/** A listed job as the contract shows it. */
export function jobOf(listed: ListedJob, now: number): Job {
  const started = Date.parse(listed.record.started_at)
  const end = listed.state === 'running' ? now : listed.endedAt
  return {
    command: listed.record.command,
    down: listed.record.down,
    duration_ms: Number.isNaN(started) || end === null ? null : Math.max(0, end - started),
    exit_code: listed.exit_code,
    id: listed.record.id,
    signal: listed.exit_code !== null && listed.exit_code > 128 ? signalName(listed.exit_code - 128) : null,
    started_at: listed.record.started_at,
    state: listed.state,
    workdir: listed.record.workdir,
  }
}

/**
 * The jobs on one open session (only `id` when given), and what was wrong with what the VM answered. A VM with more
 * records than a listing holds (job.ts, LISTED_RECORD_BYTES) has its older jobs listed by id alone: those that run or
 * are --down, which a sweep and a deletion must know of, are read one by one; the older ended ones are counted in
 * `omitted` (or said to be more than counted).
 */
export async function readJobs(
  session: SshSession,
  id?: string,
): Promise<{jobs: ListedJob[]; problems: string[]; omitted: number; more: boolean}> {
  const {jobs, leftOut, more, problems} = parseListing(await readListing(session, id))
  let omitted = 0
  for (const left of leftOut) {
    if (!left.running && !left.down) {
      omitted++
      continue
    }

    const one = parseListing(await readListing(session, left.id))
    jobs.push(...one.jobs)
    problems.push(...one.problems)
  }

  return {jobs, more, omitted, problems}
}

async function readListing(session: SshSession, id?: string): Promise<string> {
  const result = await session.exec(listScript(id), {maxBytes: MAX_LISTING_BYTES})
  if (result.overflowed || result.code !== 0)
    throw new TargonError('BAD_RESPONSE', `the VM's list of jobs is unreadable${result.overflowed ? ' (too long)' : ''}`, {
      hint: 'look at /home/ubuntu/.targon/jobs on the VM with targon ssh',
    })
  return result.stdout
}

export async function listJobs(client: TargonClient, state: LocalState, options: JobsOptions): Promise<JobsResult> {
  const vms = await selectVms(options, client, state, options)
  const read = await fanOut(vms, PARALLEL, async (vm) => {
    const ref = {name: vm.name, uid: vm.uid}
    try {
      const {session} = await openVm(vm, options)
      try {
        const {jobs, more, omitted, problems} = await readJobs(session)
        for (const problem of problems) options.warn(`${vm.name ?? vm.uid}: ${problem}`)
        if (omitted > 0 || more)
          options.warn(
            `${vm.name ?? vm.uid}: ${more ? 'more than ' : ''}${countOf(omitted, 'older ended job')} not listed (too many records for one listing); targon jobs logs ID still reads each`,
          )
        return {
          jobs: jobs.map((listed) => ({...jobOf(listed, options.clock.now()), down_pending: listed.record.down, vm: ref})),
          unreadable: [],
        }
      } finally {
        session.close()
      }
    } catch (error) {
      const failure = asTargonError(error)
      options.warn(`${vm.name ?? vm.uid}: its jobs could not be read (${failure.message})`)
      return {jobs: [], unreadable: [{...ref, error: `${failure.code}: ${failure.message}`}]}
    }
  })
  return {
    jobs: read.flatMap((each) => each.jobs).sort((a, b) => (a.started_at ?? '').localeCompare(b.started_at ?? '')),
    unreadable: read.flatMap((each) => each.unreadable),
  }
}

export interface FoundJob {
  vm: KnownVm
  session: SshSession
  listed: ListedJob
  /** What to fetch and whether to delete after it: the record kept here when `targon run` started the job from here, else the VM's. */
  record: JobRecord
}

/**
 * The VM that has job `id` among the selection's, with a session open to it (the caller closes it); NOT_FOUND when
 * none has it, or the refusal of a VM that answered for another job. The VMs are asked one after the other until one
 * has it: a job id names one VM.
 */
export async function findJob(client: TargonClient, state: LocalState, id: string, options: JobsOptions): Promise<FoundJob> {
  const vms = await selectVms(options, client, state, options)
  const local = await localJobRecord(options.configDir, id)
  const failures: string[] = []
  let refused: TargonError | undefined
  for (const vm of vms) {
    let session: SshSession | undefined
    try {
      session = (await openVm(vm, options)).session
      const {jobs} = await readJobs(session, id)
      // Asked for one job, a VM answers for that one or none: another id would be fetched, or deleted, as this one.
      const other = jobs.find((job) => job.record.id !== id)
      if (other)
        refused ??= new TargonError(
          'BAD_RESPONSE',
          `${vm.name ?? vm.uid} answered for job ${other.record.id} when asked for job ${id}: refused`,
          {
            hint: "its login shell or its jobs' files are not as targon left them; look with targon ssh",
          },
        )
      else if (jobs[0]) return {listed: jobs[0], record: local ?? jobs[0].record, session, vm}
    } catch (error) {
      failures.push(`${vm.name ?? vm.uid} (${asTargonError(error).message})`)
    }

    session?.close()
  }

  if (refused) throw refused
  throw new TargonError('NOT_FOUND', `no job ${id} on the VMs of the selection`, {
    hint:
      failures.length > 0 ? `these could not be read: ${failures.join('; ')}` : 'targon jobs lists them; --fleet or --vms widen the search',
  })
}

/** Runs `work` with the job `id` found among the selection's VMs; its session is closed afterwards. */
export async function withJob<R>(
  client: TargonClient,
  state: LocalState,
  id: string,
  options: JobsOptions,
  work: (found: FoundJob) => Promise<R>,
): Promise<R> {
  const found = await findJob(client, state, id, options)
  try {
    return await work(found)
  } finally {
    found.session.close()
  }
}

/** A listed job once followed: the state it ended in, and when (now, if it ended while followed). */
export function afterFollow(listed: ListedJob, followed: EndState, now: number): ListedJob {
  return {...listed, ...followed, endedAt: followed.state === 'running' ? null : (listed.endedAt ?? now)}
}

/**
 * A new session to a job's VM after a drop, from a fresh listing: a VM that crashed or vanished meanwhile fails with
 * what the listing says of it (not running, or gone), not with a wait for an SSH port that will not answer.
 */
export async function reopenVm(
  client: TargonClient,
  state: LocalState,
  vm: KnownVm,
  options: VmSelection & ListingRun & VmReach & {signal?: AbortSignal},
): Promise<SshSession> {
  const [fresh] = await selectVms(options, client, state, {...options, targets: [vm.uid]})
  return (await openVm(fresh as KnownVm, options)).session
}
