/**
 * A job's course once it has started, for `targon run` and `targon jobs wait`: follow its log to the end, fetch its
 * --out paths, apply its --down (after the VM's pre-delete hook), and end as `targon run` does (0, or 12 with the job's exit
 * code, or the fetch's failure). An interrupt while following leaves the job running, unless --down asked to stop
 * paying with the job: then the job is cancelled, its outputs fetched (bounded in time) and the VM deleted.
 */
import type {VmReach} from '../../domain/fleet/fan-out.js'
import type {Clock} from '../../core/clock.js'
import type {HistoryBudget} from '../../domain/deletion/history.js'
import {TargonError, abortError, asTargonError} from '../../core/errors.js'
import {printableName} from '../../core/output.js'
import {selectVms} from '../select-vms.js'
import {type RunPlace, laterCommand} from '../later-command.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {DstackLeave} from '../dstack/leave.js'
import {runDown} from '../down/down.js'
import {selectionOf} from '../down/selection.js'
import type {DeletionEvent} from '../../domain/deletion/delete-workloads.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {CopyBudget, type CopyLimit} from '../copy/budget.js'
import {emptyFetch, fetchOutputs, outputsDir} from './fetch.js'
import {type StoreOptions, fetchStored, storeOutputs} from './jobs-done.js'
import {type Followed, type Look, followJob} from './follow.js'
import {type JobRecord, jobDir, signalName, unitOf} from './job.js'
import type {FetchResult, JobOutcome} from './schema.js'
import type {DeleteReason, DeleteResult} from '../../domain/deletion/schema.js'

/** How long an interrupted run --down may spend fetching the --out paths before it deletes the VM. */
const INTERRUPTED_FETCH_MS = 120_000

/** What following a job to its end takes, for `targon run` and `targon jobs wait`. */
export interface JobFollowing extends VmReach {
  org: string
  owners: OwnerScope
  /** The fleet whose --name labels name VMs. */
  fleet: string
  /** The profile of the run's settings, for the commands it prints to paste later. */
  profile: string
  /** What a fetch of the job's outputs may write (storeLimit, from the job-store-limit setting). */
  fetchLimit: CopyLimit
  down: boolean
  hooks: boolean
  reconcileMs: number
  signal: AbortSignal
  clock: Clock
  /** The run's history reads (RunContext.historyBudget), spent by the listing of a --down deletion. */
  historyBudget: HistoryBudget
  warn: (message: string) => void
  info: (message: string) => void
  /** Each line of the job's log, bounded and printable. */
  onLine?: (line: string) => void
  /** Each deletion's course, with --down. */
  onDeletion?: (event: DeletionEvent) => void
  /** Each deletion's result, with --down (the final "deleted" line). */
  onDeleted?: (result: DeleteResult) => void
}

export interface CompleteOptions extends JobFollowing {
  /** Opens the VM's connection again after a drop. */
  reopen: () => Promise<SshSession>
  /** The first look at the job, made with its start (by `targon run`). */
  firstLook?: Look
  /**
   * jobs wait's: a --down job's outputs go into the job store first, then into ./targon-out/<job>/ from there, and
   * the VM is deleted only once they are stored (run --down, attached, deletes after any fetch).
   */
  store?: StoreOptions
  /** The dstack server the VM leaves before a --down deletes it (see workflows/dstack/leave.ts). */
  dstack?: DstackLeave
}

/** The job being completed: where it runs, the connection to its VM, its record and its result so far. */
export interface JobAtHand {
  client: TargonClient
  state: LocalState
  vm: KnownVm
  /** The caller's connection to the VM, which the caller closes. */
  session: SshSession
  record: JobRecord
  /** What is known so far, filled in as the job completes. */
  result: JobOutcome
}

/**
 * The rest of a job's course, for `targon run` and `targon jobs wait`: follow its log to the end, fetch its --out
 * paths, apply its --down, and end as `targon run` does. `result` carries what is known so far; the session is the caller's to close.
 */
export async function completeJob(job: JobAtHand, options: CompleteOptions): Promise<JobOutcome> {
  const {client, record, result, session, state, vm} = job
  const clock = options.clock
  let followed: Followed
  try {
    followed = await followJob(session, record.id, {
      clock,
      firstLook: options.firstLook,
      onLine: options.onLine,
      reopen: options.reopen,
      signal: options.signal,
    })
  } catch (error) {
    if (!options.signal.aborted) throw asTargonError(error).with({data: result})
    return interrupted(job, options)
  }

  recordJobEnd(result, followed, clock)
  if (options.down && options.store) return storeThenDelete({...job, session: followed.session}, {...options, store: options.store})
  // A fetch that cannot even begin (no SFTP, the job's directory gone) is a failed fetch: --down still deletes.
  result.fetch = await fetchOrFailure(followed.session, record, options.fetchLimit, options.signal)
  // The job has ended: an interrupt during the fetch stops the fetch, never the deletion --down asked for.
  if (options.down) result.deleted = await deleteVm(client, state, vm, options)
  if (options.signal.aborted) throw interruptedFetching(result, record, options)
  return finish(result, vm.name ?? vm.uid, options)
}

/** An interrupt that came after the job had ended: while its outputs were fetched, or its VM's hook ran (--down). */
function interruptedFetching(result: JobOutcome, record: JobRecord, options: Pick<JobFollowing, 'signal'> & RunPlace): TargonError {
  const reason = asTargonError(abortError(options.signal))
  return reason.with({
    data: result,
    hint: result.deleted
      ? `${result.vm.name ?? result.vm.uid} was deleted, as targon run --down asked`
      : `fetch them again with ${laterCommand(['jobs', 'fetch', record.id], options)}`,
    message: `interrupted by ${reason.signal ?? 'SIGINT'} after job ${record.id} ended`,
  })
}

/**
 * jobs wait on an ended --down job, as down --jobs-done does for it: its outputs into the job store, then into
 * ./targon-out/<job>/ from there, then the VM deleted after its hook. A fetch that fails keeps the VM (its TTL, budget
 * and idle limits still apply), counted and notified once, unless it has failed long enough under no limit at all.
 */
async function storeThenDelete(job: JobAtHand, options: CompleteOptions & {store: StoreOptions}): Promise<JobOutcome> {
  const {client, record, result, session, state, vm} = job
  const name = vm.name ?? vm.uid
  const stored = await storeOutputs(options, vm, session, record, result.job, options.store).catch((error: unknown) => ({
    deleteAnyway: false,
    failed: asTargonError(error).message,
    failures: 0,
  }))
  if (stored.failed === null) result.fetch = await fetchStored(stored.dir, outputsDir(record.id), new CopyBudget(options.fetchLimit))
  else result.fetch = {...emptyFetch(), failed: [{error: stored.failed, path: record.out.join(', ')}]}
  if (stored.failed === null || stored.deleteAnyway) result.deleted = await deleteVm(client, state, vm, options)
  else
    options.warn(
      `${name} is kept and bills: the outputs of job ${record.id} did not come (${stored.failed}); its TTL, budget and idle limits still apply; try again with ${laterCommand(['jobs', 'wait', record.id], options)}, or let a sweep (down --jobs-done) do it`,
    )
  if (options.signal.aborted) throw interruptedFetching(result, record, options)
  return finish(result, name, options)
}

/** Writes how the job ended (state, exit code, signal, duration, tail) into the run's result. */
function recordJobEnd(result: JobOutcome, followed: Followed, clock: Clock): void {
  const exit = followed.exit_code
  Object.assign(result.job, {
    duration_ms: Math.max(0, clock.now() - Date.parse(result.job.started_at ?? '')),
    exit_code: exit,
    signal: exit !== null && exit > 128 ? signalName(exit - 128) : null,
    state: followed.state,
  })
  result.exit_code = exit
  result.tail = followed.tail
}

/**
 * Deletes the job's VM through down's workflow. Once the user asked for it (--down, or the clean-up of what `targon run` rented)
 * an interrupt does not stop it: the run's own client, which stops with the interrupt, is not used for it. An interrupt
 * does stop the VM's pre-delete hook, as in down: the VM is then deleted at once (and after one, no hook starts).
 */
export async function deleteVm(
  client: TargonClient,
  state: LocalState,
  vm: Pick<KnownVm, 'name' | 'uid'>,
  options: Pick<
    CompleteOptions,
    | 'clock'
    | 'configDir'
    | 'dstack'
    | 'fleet'
    | 'historyBudget'
    | 'hooks'
    | 'info'
    | 'onDeletion'
    | 'onDeleted'
    | 'org'
    | 'owners'
    | 'reconcileMs'
    | 'connectMs'
    | 'signal'
    | 'warn'
  >,
  reason: DeleteReason = 'job-done',
): Promise<NonNullable<JobOutcome['deleted']>> {
  if (reason === 'job-done') options.info(`Deleting ${vm.name ?? vm.uid}: its job has ended (--down)`)
  const report = (down: {results: DeleteResult[]}) =>
    down.results.map((each) => ({
      action: each.action,
      billing: each.billing,
      hook: each.hook ? {exit_code: each.hook.exit_code, output_tail: each.hook.output_tail, status: each.hook.status} : null,
      name: each.name,
      uid: each.uid,
    }))
  try {
    const calm = client.withSignal(undefined)
    const down = await runDown({...options, signal: new AbortController().signal}, calm, calm, options.org, state, {
      configDir: options.configDir,
      confirm: async () => true,
      dryRun: false,
      dstack: options.dstack,
      hookStop: options.signal,
      hooks: options.hooks,
      ignoreMissing: true,
      labelFleet: options.fleet,
      onEvent: options.onDeletion,
      onResult: options.onDeleted,
      parallel: 1,
      reasonOf: () => reason,
      reconcileMs: options.reconcileMs,
      connectMs: options.connectMs,
      selection: selectionOf(options.owners, {targets: [vm.uid]}),
      wakeRegistered: false,
    })
    return report(down)
  } catch (error) {
    const failure = asTargonError(error)
    const partial = failure.data as {results?: DeleteResult[]} | undefined
    throw failure.with({data: {deleted: partial?.results ? report({results: partial.results}) : null}})
  }
}

/** The run's end: 0 when the job succeeded and every output came home, else the job's failure, else the fetch's. */
function finish(result: JobOutcome, name: string, place: RunPlace): JobOutcome {
  const {job} = result
  const failed = result.fetch.failed[0]
  const notFetched = failed ? `--out ${failed.path} was not fetched: ${printableName(failed.error)}` : ''
  if (job.state !== 'succeeded') {
    const how =
      job.state === 'failed'
        ? `exit code ${job.exit_code}${job.signal ? ` (killed by ${job.signal}, or its own exit code)` : ''}`
        : job.state === 'cancelled'
          ? 'it was cancelled'
          : 'it ended without an exit code (killed with its unit, or the VM restarted)'
    throw new TargonError('REMOTE_COMMAND_FAILED', `job ${job.id} on ${name} failed: ${how}`, {
      data: result,
      // Its outputs too may have stopped short (at their bound): said beside the job's failure, not instead of it.
      hint: `see tail (--json) or the whole log: ${laterCommand(['jobs', 'logs', job.id], place)}${failed ? `; the output ${failed.path} was not fetched: ${printableName(failed.error)}` : ''}`,
    })
  }

  if (failed)
    throw new TargonError('COPY_FAILED', `job ${job.id} succeeded, but ${notFetched}`, {
      data: result,
      hint: result.deleted ? `${name} was deleted, as targon run --down asked` : `the outputs stay on the VM in ${job.workdir}`,
    })
  return result
}

/**
 * After the start, an interrupt: with --down, cancel the job, fetch what --out names (bounded in time) and delete the
 * VM, as the user asked not to pay past the job; without, the job goes on and the run says how to follow it.
 */
async function interrupted(job: JobAtHand, options: CompleteOptions): Promise<never> {
  const {client, record, result, session, state} = job
  const reason = asTargonError(abortError(options.signal))
  const signal = reason.signal ?? 'SIGINT'
  const name = result.vm.name ?? result.vm.uid
  if (!options.down) {
    throw reason.with({
      data: result,
      hint: `${name} bills meanwhile, under its own limits (its TTL, idle limit and budget; a running job keeps idle deletion away): follow with ${laterCommand(['jobs', 'logs', record.id, '-f'], options)}, wait for it (outputs included) with ${laterCommand(['jobs', 'wait', record.id], options)}, fetch with ${laterCommand(['jobs', 'fetch', record.id], options)}, stop it with ${laterCommand(['jobs', 'cancel', record.id], options)}`,
      message: `interrupted by ${signal}; job ${record.id} still runs on ${name}`,
    })
  }

  options.info(`Cancelling job ${record.id} and deleting ${name} (--down)`)
  const cleanup = AbortSignal.timeout(INTERRUPTED_FETCH_MS)
  await cancelJob(session, record.id).catch((error: unknown) =>
    options.warn(`could not cancel job ${record.id}: ${asTargonError(error).message}`),
  )
  Object.assign(result.job, {state: 'cancelled'})
  result.fetch = await fetchOrFailure(session, record, options.fetchLimit, cleanup)
  // The run's own client stops with the interrupt: the deletion the user asked for goes on without it.
  const calm = client.withSignal(undefined)
  const vm = (await selectVms(options, calm, state, {...options, targets: [result.vm.uid]}))[0] as KnownVm
  result.deleted = await deleteVm(calm, state, vm, options)
  throw reason.with({data: result, message: `interrupted by ${signal}: job ${record.id} cancelled, ${name} deleted`})
}

/** The job's --out paths fetched within their bound; a fetch that failed as a whole is one failure naming them all. */
async function fetchOrFailure(session: SshSession, record: JobRecord, limit: CopyLimit, signal: AbortSignal): Promise<FetchResult> {
  return fetchOutputs(session, record, {budget: new CopyBudget(limit), root: outputsDir(record.id), signal}).catch((error: unknown) => ({
    ...emptyFetch(),
    failed: [{error: error instanceof Error ? error.message : String(error), path: record.out.join(', ')}],
  }))
}

/** Marks the job cancelled (so that its end reads as such), then stops its unit; the log stays. */
export async function cancelJob(session: SshSession, id: string): Promise<void> {
  const stopped = await session.exec(`: >${shellQuote(`${jobDir(id)}/cancelled`)}; sudo -n systemctl stop ${unitOf(id)} 2>&1 || true`, {
    maxBytes: 64 * 1024,
  })
  if (stopped.code !== 0) throw new TargonError('REMOTE_COMMAND_FAILED', `stopping ${unitOf(id)} failed: ${stopped.stdout.trim()}`)
}
