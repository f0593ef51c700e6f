/**
 * `targon run` on an existing VM: sync the working directory, start the command as a job (a transient systemd unit
 * that outlives the SSH session), follow its log to the end, fetch the --out paths, and with --down delete the VM
 * after its pre-delete hook. Phases pass one typed value along (RunResult, filled as they go); progress goes to the
 * listeners. An interrupt after the start leaves the job running, unless --down asked to stop paying with the job.
 */
import {posix} from 'node:path'

import type {Clock} from '../../core/clock.js'
import type {HistoryBudget} from '../../domain/deletion/history.js'
import {TargonError, abortError, asTargonError, isTargonError, usageError} from '../../core/errors.js'
import {openVm} from '../../domain/fleet/fan-out.js'
import {selectVms} from '../select-vms.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import type {KnownVm} from '../../domain/fleet/workloads.js'
import {runDown} from '../down/down.js'
import {updateIdleSampler} from '../../adapters/bootstrap/idle-config.js'
import type {DeletionEvent} from '../../domain/deletion/delete-workloads.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {syncWorkdir} from '../sync/sync.js'
import {walkLocal} from '../sync/walk.js'
import {emptyFetch, fetchOutputs} from './fetch.js'
import {startJob} from './start.js'
import {readOffersToCheck, refuseIfOffer} from './rent.js'
import {reopenVm} from './jobs.js'
import {type Followed, type Look, followJob} from './follow.js'
import {type JobRecord, SYNC_MANIFESTS, WORK_ROOT, jobDir, newJobId, signalName, unitOf, workdirIdOf} from './job.js'
import type {FetchResult, Job, RunResult} from './schema.js'
import type {DeleteReason, DeleteResult} from '../../domain/deletion/schema.js'
import type {UpResult} from '../up/schema.js'

/** How long an interrupted run --down may spend fetching the --out paths before it deletes the VM. */
const INTERRUPTED_FETCH_MS = 120_000

export interface RunOptions {
  org: string
  owners: OwnerScope
  /** The fleet whose --name labels name VMs. */
  fleet: string
  configDir: string
  /** The VM: a name, uid or label; null with --gpu. */
  word: string | null
  /** Rents a VM (up's workflow) when the word names none; absent: run only uses existing VMs. */
  rent?: () => Promise<UpResult>
  command: string
  env: {name: string; value: string}[]
  /** The absolute local working directory (checked to exist). */
  localDir: string
  sync: boolean
  /** Return once the job has started. */
  detach: boolean
  /** Checked --out paths. */
  out: string[]
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
  /** Once the job has started (for the display). */
  onStarted?: (job: Job, vm: KnownVm) => void
}

export async function runJob(client: TargonClient, state: LocalState, options: RunOptions): Promise<RunResult> {
  const {rented, vm} = await findVm(client, state, options)
  try {
    return await startAndFollow(client, state, vm, options)
  } catch (error) {
    // What run rented goes again when the job could not start (a failure, an interrupt), as up's own clean-up does.
    if (!rented || (isTargonError(error) && error.data?.job)) throw error
    return deleteRented(client, state, vm, error, options)
  }
}

/** What run rented for a job that did not start goes again; the run ends with `error`, the deletion in its data. */
async function deleteRented(
  client: TargonClient,
  state: LocalState,
  vm: Pick<KnownVm, 'name' | 'uid'>,
  error: unknown,
  options: RunOptions,
): Promise<never> {
  options.info(`Deleting ${vm.name ?? vm.uid}, rented for a job that did not start`)
  const deleted = await deleteVm(client, state, vm, options, 'down')
  throw asTargonError(error).with({data: {deleted}})
}

async function startAndFollow(client: TargonClient, state: LocalState, vm: KnownVm, options: RunOptions): Promise<RunResult> {
  const clock = options.clock
  const name = vm.name ?? vm.uid
  // The local walk of the sync runs while the connection opens; its failure is the sync's to report.
  const walked = options.sync ? walkLocal(options.localDir) : undefined
  walked?.catch(() => undefined)
  const session = (await openVm(vm, options)).session
  const opened: SshSession[] = []
  try {
    // The sampler is updated over its own channel while the sync runs; both are done before the job starts.
    const sampler = updateSampler(session, name, options)
    const workId = workdirIdOf(options.localDir)
    const remoteDir = posix.join(WORK_ROOT, workId)
    let sync: RunResult['sync'] = null
    // The sync's manifest is written while the job starts: the files are in place. Its failure costs only the next
    // sync's work (it sends these files again), so it is a warning once the job runs.
    let manifest = Promise.resolve()
    try {
      if (options.sync) {
        options.info(`Syncing ${options.localDir} to ${name}:${remoteDir}`)
        const synced = await syncWorkdir(session, {
          localDir: options.localDir,
          manifestPath: posix.join(SYNC_MANIFESTS, `${workId}.json`),
          remoteDir,
          signal: options.signal,
          walked,
          warn: options.warn,
        })
        sync = {...synced.report, local_dir: options.localDir, remote_dir: remoteDir}
        manifest = synced.manifest.catch((error: unknown) =>
          options.warn(`${asTargonError(error).message}; the next sync of ${options.localDir} sends its files again`),
        )
      }
    } finally {
      await sampler
    }

    if (options.signal.aborted) throw abortError(options.signal)
    const record: JobRecord = {
      command: options.command,
      down: options.down,
      id: newJobId(clock.now()),
      out: options.out,
      started_at: new Date(clock.now()).toISOString(),
      workdir: remoteDir,
    }
    // A --down job is recorded here before it starts, whether or not the run follows it: a sweep (down --jobs-done)
    // reads the VM's jobs when its record names one, so the VM still goes after the job when this run stops early
    // (killed, or cut off), even in the second the start takes. A job that never started is no ended job there.
    if (options.down && vm.record) state.updateVm(options.org, vm.record.name, {down_job: record.id})
    const reopen = () => reopenVm(client, state, vm, {...options, targets: []})
    const [{firstLook, session: following}] = await Promise.all([startJob(session, record, options.env, reopen, !options.detach), manifest])
    if (following !== session) opened.push(following)
    const job: Job = {
      command: record.command,
      down: record.down,
      duration_ms: null,
      exit_code: null,
      id: record.id,
      signal: null,
      started_at: record.started_at,
      state: 'running',
      workdir: record.workdir,
    }
    options.onStarted?.(job, vm)
    const result: RunResult = {
      deleted: null,
      exit_code: null,
      fetch: emptyFetch(),
      job,
      sync,
      tail: [],
      vm: {name: vm.name, uid: vm.uid},
    }

    if (options.down && !vm.record && options.detach)
      options.warn(
        `this config directory holds no record of ${name}: no sweep from it deletes the VM when job ${record.id} ends; run targon jobs wait ${record.id} (or down --jobs-done) once it has`,
      )
    // --detach: the job is started, and the rest is left to jobs wait, or with --down to that sweep.
    if (options.detach) return result
    return await completeJob(client, state, vm, following, record, result, {...options, firstLook, reopen})
  } finally {
    session.close()
    for (const other of opened) other.close()
  }
}

export type CompleteOptions = Omit<
  RunOptions,
  'command' | 'detach' | 'env' | 'localDir' | 'onStarted' | 'out' | 'rent' | 'sync' | 'word'
> & {
  /** Opens the VM's connection again after a drop. */
  reopen: () => Promise<SshSession>
  /** The first look at the job, made with its start (run's). */
  firstLook?: Look
}

/**
 * The rest of a job's course, for run and jobs wait: follow its log to the end, fetch its --out paths, apply its
 * --down, and end as run does. `result` carries what is known so far; the session is the caller's to close.
 */
export async function completeJob(
  client: TargonClient,
  state: LocalState,
  vm: KnownVm,
  session: SshSession,
  record: JobRecord,
  result: RunResult,
  options: CompleteOptions,
): Promise<RunResult> {
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
    return interrupted(client, state, session, record, result, options)
  }

  recordJobEnd(result, followed, clock)
  // A fetch that cannot even begin (no SFTP, the job's directory gone) is a failed fetch: --down still deletes.
  result.fetch = await fetchOrFailure(followed.session, record, options.signal)
  // The job has ended: an interrupt during the fetch stops the fetch, never the deletion --down asked for.
  if (options.down) result.deleted = await deleteVm(client, state, vm, options)
  if (options.signal.aborted) {
    const reason = asTargonError(abortError(options.signal))
    throw reason.with({
      data: result,
      hint: options.down
        ? `${result.vm.name ?? result.vm.uid} was deleted (--down)`
        : `fetch them again with targon jobs fetch ${record.id}`,
      message: `interrupted by ${reason.signal ?? 'SIGINT'} while fetching the outputs of job ${record.id}`,
    })
  }
  return finish(result, vm.name ?? vm.uid)
}

/** The VM that WORD names; else, when run may rent (WORD names an offer, or --gpu), the one it rents. */
async function findVm(client: TargonClient, state: LocalState, options: RunOptions): Promise<{vm: KnownVm; rented: boolean}> {
  try {
    if (options.word === null) throw new TargonError('NOT_FOUND', 'no VM named')
    // Where run may rent, a WORD that names a VM must name no offer: the offers are read while the VMs are listed.
    const offers = options.rent ? readOffersToCheck(client, options.signal) : undefined
    const [vm] = await selectVms(options, client, state, {...options, targets: [options.word]})
    if (offers) refuseIfOffer(options.word, vm as KnownVm, await offers, options)
    return {rented: false, vm: vm as KnownVm}
  } catch (error) {
    if (!(error instanceof TargonError && error.code === 'NOT_FOUND')) throw error
    if (!options.rent) throw usageError(`${options.word} names no VM of the selection`, error.hint ?? 'targon status lists the VMs')
  }

  const up = await options.rent().catch((error: unknown) => {
    // Nothing was rented for a word that is no offer either.
    if (isTargonError(error) && error.code === 'NOT_FOUND' && options.word !== null)
      throw usageError(`${options.word} names no VM of the selection and no offer`, 'targon status lists the VMs, targon offers the offers')
    throw error
  })
  // From here the VM bills: a lookup that fails (an interrupt, a listing that does not show it yet) deletes it again.
  const made = {name: up.vms[0]?.name ?? null, uid: up.vms[0]?.uid as string}
  try {
    const [vm] = await selectVms(options, client, state, {...options, targets: [made.uid]})
    return {rented: true, vm: vm as KnownVm}
  } catch (error) {
    return deleteRented(client, state, made, error, options)
  }
}

/** A running job is activity only for a sampler of this version: an older one is updated first. */
async function updateSampler(session: SshSession, name: string, options: Pick<RunOptions, 'info' | 'warn'>): Promise<void> {
  try {
    if ((await updateIdleSampler(session)) === 'updated')
      options.info(`Updated the idle sampler on ${name}: a running job now counts as activity`)
  } catch (error) {
    options.warn(
      `${name}: the idle sampler could not be updated (${asTargonError(error).message}); its idle limit may delete it while the job runs`,
    )
  }
}

/** Writes how the job ended (state, exit code, signal, duration, tail) into the run's result. */
function recordJobEnd(result: RunResult, followed: Followed, clock: Clock): void {
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
 * Deletes the job's VM through down's workflow. Once the user asked for it (--down, or run's clean-up of what it rented)
 * an interrupt does not stop it: the run's own client, which stops with the interrupt, is not used for it.
 */
async function deleteVm(
  client: TargonClient,
  state: LocalState,
  vm: Pick<KnownVm, 'name' | 'uid'>,
  options: Pick<
    CompleteOptions,
    'clock' | 'configDir' | 'fleet' | 'historyBudget' | 'hooks' | 'info' | 'onDeletion' | 'org' | 'owners' | 'reconcileMs' | 'warn'
  >,
  reason: DeleteReason = 'job-done',
): Promise<NonNullable<RunResult['deleted']>> {
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
      hooks: options.hooks,
      ignoreMissing: true,
      labelFleet: options.fleet,
      onEvent: options.onDeletion,
      parallel: 1,
      reasonOf: () => reason,
      reconcileMs: options.reconcileMs,
      selection: {
        all: false,
        any_origin: false,
        any_owner: options.owners.anyOwner,
        expired: false,
        fleet: null,
        idle: false,
        idle_limit_seconds: null,
        jobs_done: false,
        older_than_seconds: null,
        over_cost_usd: null,
        owner: options.owners.owner,
        targets: [vm.uid],
      },
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
function finish(result: RunResult, name: string): RunResult {
  const {job} = result
  if (job.state !== 'succeeded') {
    const how =
      job.state === 'failed'
        ? `exit code ${job.exit_code}${job.signal ? ` (killed by ${job.signal}, or its own exit code)` : ''}`
        : job.state === 'cancelled'
          ? 'it was cancelled'
          : 'it ended without an exit code (killed with its unit, or the VM restarted)'
    throw new TargonError('REMOTE_COMMAND_FAILED', `job ${job.id} on ${name} failed: ${how}`, {
      data: result,
      hint: `see tail (--json) or the whole log: targon jobs logs ${job.id}`,
    })
  }

  const failed = result.fetch.failed[0]
  if (failed)
    throw new TargonError('COPY_FAILED', `job ${job.id} succeeded, but --out ${failed.path} was not fetched: ${failed.error}`, {
      data: result,
      hint: `the outputs stay on the VM in ${job.workdir}`,
    })
  return result
}

/**
 * After the start, an interrupt: with --down, cancel the job, fetch what --out names (bounded in time) and delete the
 * VM, as the user asked not to pay past the job; without, the job goes on and the run says how to follow it.
 */
async function interrupted(
  client: TargonClient,
  state: LocalState,
  session: SshSession,
  record: JobRecord,
  result: RunResult,
  options: CompleteOptions,
): Promise<never> {
  const reason = asTargonError(abortError(options.signal))
  const signal = reason.signal ?? 'SIGINT'
  const name = result.vm.name ?? result.vm.uid
  if (!options.down) {
    throw reason.with({
      data: result,
      hint: `${name} bills meanwhile, under its own limits (--ttl, --idle, --max-cost; a running job keeps idle deletion away): follow with targon jobs logs ${record.id} -f, wait for it (outputs included) with targon jobs wait ${record.id}, fetch with targon jobs fetch ${record.id}, stop it with targon jobs cancel ${record.id}`,
      message: `interrupted by ${signal}; job ${record.id} still runs on ${name}`,
    })
  }

  options.info(`Cancelling job ${record.id} and deleting ${name} (--down)`)
  const cleanup = AbortSignal.timeout(INTERRUPTED_FETCH_MS)
  await cancelJob(session, record.id).catch((error: unknown) =>
    options.warn(`could not cancel job ${record.id}: ${asTargonError(error).message}`),
  )
  Object.assign(result.job, {state: 'cancelled'})
  result.fetch = await fetchOrFailure(session, record, cleanup)
  // The run's own client stops with the interrupt: the deletion the user asked for goes on without it.
  const calm = client.withSignal(undefined)
  const vm = (await selectVms(options, calm, state, {...options, targets: [result.vm.uid]}))[0] as KnownVm
  result.deleted = await deleteVm(calm, state, vm, options)
  throw reason.with({data: result, message: `interrupted by ${signal}: job ${record.id} cancelled, ${name} deleted`})
}

/** The job's --out paths fetched; a fetch that failed as a whole is one failure naming them all. */
async function fetchOrFailure(session: SshSession, record: JobRecord, signal: AbortSignal): Promise<FetchResult> {
  return fetchOutputs(session, record, signal).catch((error: unknown) => ({
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
