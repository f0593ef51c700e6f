/**
 * `down --jobs-done` and the sweep: the VMs whose detached `run --down` job has ended. Each chosen VM is read over SSH
 * (its jobs, as targon jobs reads them): it is to be deleted when one of its --down jobs has ended and no job of it
 * still runs; its --out paths are fetched first into the config directory's job store (jobs/<job id>/), so that
 * `targon jobs fetch` can still copy them once the VM is gone. A VM that cannot be read, or whose outputs do not come
 * (within the store's bound, see job-store.ts), is kept (its --ttl, --max-cost and idle limit still apply) and said in
 * a warning; a failing fetch is notified once per job, and a VM under none of those limits is deleted without its
 * outputs once its fetch has failed long enough (givesUp), so that it never bills without end.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import * as z from 'zod'

import type {DownResult} from '../down/schema.js'
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import {countOf, printableName} from '../../core/output.js'
import {type VmReach, openVm} from '../../domain/fleet/fan-out.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {jobOf, readJobs} from './jobs.js'
import {laterCommand} from '../later-command.js'
import {type FetchResult, type Job, JobSchema} from './schema.js'
import type {JobRecord, ListedJob} from './job.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {LocalSide} from '../copy/sides.js'
import {copyTree} from '../copy/tree.js'
import {fetchOutputs} from './fetch.js'
import type {DeletionRun} from '../run-context.js'
import {CopyBudget, type CopyLimit} from '../copy/budget.js'
import {
  type FailingFetch,
  GIVE_UP_FAILURES,
  GIVE_UP_MS,
  clearFetchFailures,
  givesUp,
  jobStoreDir,
  markFetchFailureNotified,
  pruneStore,
  readStoreFile,
  recordFetchFailure,
} from './job-store.js'
import {} from '../../domain/fleet/fleet-read.js'
import {idleLimitOf, limitsOf} from '../../domain/fleet/limits.js'

type Kept = DownResult['kept'][number]

/** The config directory holds the job store too. */
export interface JobsDoneOptions extends VmReach {
  /** The run's profile, for the commands it names to run by hand. */
  profile: string
  parallel: number
  /** Without deleting (--dry-run): nothing is fetched. */
  dryRun: boolean
  /** What a fetch into the job store may write per job (storeLimit). */
  storeLimit: CopyLimit
  /** The idle limit of VMs whose record names none (sweep's --idle-limit); null or absent: none. */
  idleLimitS?: number | null
  /** Tells of a job whose fetch failed, once per job; true once delivered (or printed), false to try again next time. */
  notifyFetchFailing?: (notice: FetchFailingNotice) => Promise<boolean>
}

export interface FetchFailingNotice {
  vm: {name: string | null; uid: string}
  job: string
  text: string
}

/** The job and its VM, beside its outputs in the store: what jobs fetch says once the VM is gone. */
const STORED_JOB = 'job.json'

const StoredJobSchema = z.object({job: JobSchema, vm: z.object({uid: z.string(), name: z.string().nullable()})})

/** A job whose outputs are in the store, with where they are; undefined when the store has none of it (or a corrupt entry). */
export async function storedJob(configDir: string, id: string): Promise<(z.infer<typeof StoredJobSchema> & {dir: string}) | undefined> {
  const dir = jobStoreDir(configDir, id)
  const stored = await readStoreFile(join(dir, STORED_JOB), StoredJobSchema)
  return stored ? {...stored, dir: join(dir, 'out')} : undefined
}

export async function keepUnlessJobsDone(
  run: DeletionRun,
  chosen: KnownVm[],
  options: JobsDoneOptions,
): Promise<{chosen: KnownVm[]; kept: DownResult['kept']}> {
  const live = chosen.filter((vm) => !vm.gone && vm.status === 'running')
  if (!options.dryRun && live.length > 0) await pruneStore(options.configDir, run.clock.now())
  const verdicts = await mapBounded(live, options.parallel, (vm) => verdictOf(run, vm, options))
  const kept = verdicts.filter((each): each is Kept => each !== true)
  const unreadable = kept.filter((each) => each.state === 'unreadable')
  if (unreadable.length > 0)
    run.warn(
      `kept ${countOf(unreadable.length, 'VM')} whose jobs could not be read or fetched (${unreadable.map((each) => `${each.name ?? each.uid}: ${each.reason}`).join('; ')}); their --ttl, --max-cost and idle limits still apply`,
    )
  return {chosen: live.filter((_, index) => verdicts[index] === true), kept}
}

/**
 * What a VM's jobs say of it under --jobs-done: kept, and why (a job runs, none was --down, or the listing was cut
 * short, so that a job might still run unseen); or the ended --down jobs whose outputs come before it goes.
 */
export function judgeJobs(listing: {jobs: ListedJob[]; more: boolean}): {state: Kept['state']; reason: string} | {done: ListedJob[]} {
  if (listing.more) return {reason: 'more jobs than one listing reads; whether one still runs is not known', state: 'unreadable'}
  const running = listing.jobs.filter((job) => job.state === 'running')
  if (running.length > 0) return {reason: `busy: job ${running.map((job) => job.record.id).join(', job ')}`, state: 'busy'}
  const done = listing.jobs.filter((job) => job.record.down)
  return done.length === 0 ? {reason: 'no ended run --down job', state: 'idle'} : {done}
}

/** true: to be deleted; else why it is kept. */
async function verdictOf(run: DeletionRun, vm: KnownVm, options: JobsDoneOptions): Promise<Kept | true> {
  const keep = (state: Kept['state'], reason: string): Kept => ({idle_seconds: null, name: vm.name, reason, state, uid: vm.uid})
  try {
    const {session} = await openVm(vm, {configDir: options.configDir, connectMs: options.connectMs, signal: run.signal})
    try {
      const judged = judgeJobs(await readJobs(session))
      if ('reason' in judged) return keep(judged.state, judged.reason)
      if (options.dryRun) return true
      for (const job of judged.done) {
        const stored = await storeOutputs(run, vm, session, job.record, jobOf(job, run.clock.now()), options)
        if (stored.failed === null || stored.deleteAnyway) continue
        return keep(
          'unreadable',
          `job ${job.record.id}: ${stored.failed}, ${stored.failures === 1 ? 'once' : `${stored.failures} times in a row`}; fetch by hand: ${fetchByHand(vm, job.record.id, options)}`,
        )
      }

      return true
    } finally {
      session.close()
    }
  } catch (error) {
    return keep('unreadable', asTargonError(error).message)
  }
}

export type StoreOptions = Pick<JobsDoneOptions, 'configDir' | 'idleLimitS' | 'notifyFetchFailing' | 'profile' | 'storeLimit'>

/**
 * The --out paths of an ended job of the VM fetched into the job store (`dir`, as storedJob gives it), within its
 * bound, job.json last (so that only a whole fetch has it). A fetch that fails is counted and notified once
 * (fetchFailed); `deleteAnyway` says whether the VM goes all the same. A connection that cannot even begin the fetch throws.
 */
export async function storeOutputs(
  run: DeletionRun,
  vm: KnownVm,
  session: SshSession,
  record: JobRecord,
  job: Job,
  options: StoreOptions,
): Promise<{failed: null; dir: string} | {failed: string; failures: number; deleteAnyway: boolean}> {
  const store = jobStoreDir(options.configDir, record.id)
  const dir = join(store, 'out')
  const fetch = await fetchOutputs(session, record, {budget: new CopyBudget(options.storeLimit), root: dir, signal: run.signal})
  const failed = fetch.failed[0]
  if (failed) {
    // The error may name a file of the VM's: one line, whatever the name holds.
    const reason = `--out ${failed.path} was not fetched (${printableName(failed.error)})`
    // An interrupt is the user's: no failure of the fetch.
    if (run.signal.aborted) return {deleteAnyway: false, failed: reason, failures: 0}
    const failing = await fetchFailed(run, vm, record.id, reason, options)
    return {deleteAnyway: failing.deleteAnyway, failed: reason, failures: failing.failures}
  }

  await mkdir(store, {mode: 0o700, recursive: true})
  const stored: z.infer<typeof StoredJobSchema> = {job, vm: {name: vm.name, uid: vm.uid}}
  await writeFile(join(store, STORED_JOB), `${JSON.stringify(stored)}\n`, {mode: 0o600})
  await clearFetchFailures(options.configDir, record.id)
  return {dir, failed: null}
}

/**
 * Counts a failed fetch of the job, notifies it once (naming what still ends the VM), and says whether the VM goes all
 * the same: under no TTL, budget or idle limit, once it has failed long enough (givesUp).
 */
async function fetchFailed(
  run: DeletionRun,
  vm: KnownVm,
  job: string,
  reason: string,
  options: StoreOptions,
): Promise<FailingFetch & {deleteAnyway: boolean}> {
  const now = run.clock.now()
  const failing = await recordFetchFailure(options.configDir, job, reason, now)
  const name = vm.name ?? vm.uid
  const limits = limitsInWords(vm, options.idleLimitS ?? null)
  const deleteAnyway = limits.length === 0 && givesUp(failing, now)
  if (failing.notified_at === null && options.notifyFetchFailing) {
    const giveUpAt = new Date(Date.parse(failing.first_failed_at) + GIVE_UP_MS).toISOString().slice(0, 16)
    const ends =
      limits.length > 0
        ? `${limits.join(', ')} still end it`
        : `it has no TTL, budget or idle limit: unless a fetch succeeds first, the first sweep or down --jobs-done after ${giveUpAt}Z (and ${GIVE_UP_FAILURES} failures) deletes it without its outputs`
    const text = `targon: the outputs of job ${job} on ${name} could not be fetched: ${reason}. ${name} is kept and bills; ${ends}. Fetch by hand: ${fetchByHand(vm, job, options)}; delete it: targon down ${vm.name === null || vm.name.startsWith('-') ? vm.uid : vm.name}`
    // A notification is optional: its failure never changes what happens to the VM.
    const delivered = await options.notifyFetchFailing({job, text, vm: {name: vm.name, uid: vm.uid}}).catch(() => false)
    if (delivered) await markFetchFailureNotified(options.configDir, job, failing, now)
  }

  if (deleteAnyway)
    run.warn(
      `deleting ${name} without the outputs of job ${job}: their fetch failed ${failing.failures} times since ${failing.first_failed_at.slice(0, 16)}Z (${reason}), and no TTL, budget or idle limit would ever end its billing`,
    )
  return {...failing, deleteAnyway}
}

/** The limits that end the VM's billing on their own, in words; none: nothing but a deletion does. */
function limitsInWords(vm: KnownVm, idleLimitS: number | null): string[] {
  const {max_cost_usd: budget, ttl_expires_at: ttl} = limitsOf(vm)
  const idle = idleLimitOf(vm, idleLimitS)
  return [
    ...(ttl ? [`its TTL (${ttl.slice(0, 16)}Z)`] : []),
    ...(budget === null ? [] : [`its budget (${budget} USD)`]),
    ...(idle === null ? [] : [`its idle limit (${idle} s)`]),
  ]
}

/**
 * Copies a stored job's outputs into `root` (./targon-out/<job id>/), as a fetch from its VM would have placed them,
 * within the same bound (the local disk may be another, and fuller, than the store's).
 */
export async function fetchStored(dir: string, root: string, budget: CopyBudget): Promise<FetchResult> {
  const local = new LocalSide()
  const fetch: FetchResult = {bytes: 0, copied: [], destination: `${root}/`, failed: [], skipped: []}
  for (const entry of await local.list(dir)) {
    if (entry.kind !== 'dir' && entry.kind !== 'file') continue
    await mkdir(root, {mode: 0o755, recursive: true})
    const outcome = await copyTree(local, local, join(dir, entry.name), entry, join(root, entry.name), entry.name, {
      budget,
      lost: () => null,
    })
    fetch.copied.push(...outcome.copied)
    fetch.failed.push(...outcome.failed)
    fetch.skipped.push(...outcome.skipped)
    fetch.bytes += outcome.bytes
    if (outcome.stopped) {
      fetch.failed.push({error: outcome.stopped, path: entry.name})
      break
    }
  }

  return fetch
}

/** The jobs fetch of a job whose outputs did not come, as its user can paste it (the VM's fleet, this run's place). */
function fetchByHand(vm: KnownVm, id: string, options: Pick<JobsDoneOptions, 'configDir' | 'profile'>): string {
  return laterCommand(['jobs', 'fetch', id], {configDir: options.configDir, fleet: vm.fleet ?? undefined, profile: options.profile})
}
