/**
 * `targon run` on an existing VM (or one it rents): sync the working directory, start the command as a job (a
 * transient systemd unit that outlives the SSH session), then follow it to its end (complete.ts: fetch the --out
 * paths, and with --down delete the VM after its pre-delete hook). Phases pass one typed value along (JobOutcome,
 * filled as they go); progress goes to the listeners. An interrupt after the start leaves the job running, unless --down asked to stop paying with the job.
 */
import {posix} from 'node:path'

import {TargonError, abortError, asTargonError, isTargonError, usageError} from '../../core/errors.js'
import {openVm} from '../../domain/fleet/fan-out.js'
import {selectVms} from '../select-vms.js'
import {laterCommand} from '../later-command.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {updateIdleSampler} from '../../adapters/bootstrap/idle-config.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {syncWorkdir} from '../sync/sync.js'
import {walkLocal} from '../sync/walk.js'
import type {NeverSentDir} from '../sync/held-back.js'
import {emptyFetch} from './fetch.js'
import {forgetJobRecord, saveJobRecord} from './job-store.js'
import {startJob} from './start.js'
import {readOffersToCheck, refuseIfOffer} from './rent.js'
import {reopenVm} from './jobs.js'
import {type JobFollowing, completeJob, deleteVm} from './complete.js'
import {type JobRecord, SYNC_MANIFESTS, WORK_ROOT, newJobId, workdirIdOf} from './job.js'
import type {Job, JobOutcome} from './schema.js'
import type {UpResult} from '../up/schema.js'
import {carryLimits, limitsFile} from '../../domain/fleet/limits.js'

export interface RunJobOptions extends JobFollowing {
  /** The VM: a name, uid or label; null with --gpu. */
  word: string | null
  /** Rents a VM (up's workflow) when the word names none; absent: the job runs only on an existing VM. */
  rent?: () => Promise<UpResult>
  command: string
  env: {name: string; value: string}[]
  /** The absolute local working directory (checked to exist). */
  localDir: string
  sync: boolean
  /** What the sync never sends (held-back.ts): targon's config directories and ~/.ssh. */
  neverSent: readonly NeverSentDir[]
  /** Return once the job has started. */
  detach: boolean
  /** Checked --out paths. */
  out: string[]
  /** Once the job has started (for the display). */
  onStarted?: (job: Job, vm: KnownVm) => void
}

export async function runJob(client: TargonClient, state: LocalState, options: RunJobOptions): Promise<JobOutcome> {
  const {rented, vm} = await findVm(client, state, options)
  try {
    return await startAndFollow(client, state, vm, options)
  } catch (error) {
    // What `targon run` rented goes again when the job could not start (a failure, an interrupt), as up's own clean-up does.
    if (!rented || (isTargonError(error) && error.data?.job)) throw error
    return deleteRented(client, state, vm, error, options)
  }
}

/** What `targon run` rented for a job that did not start goes again; the run ends with `error`, the deletion in its data. */
async function deleteRented(
  client: TargonClient,
  state: LocalState,
  vm: Pick<KnownVm, 'name' | 'uid'>,
  error: unknown,
  options: RunJobOptions,
): Promise<never> {
  options.info(`Deleting ${vm.name ?? vm.uid}, rented for a job that did not start`)
  const deleted = await deleteVm(client, state, vm, options, 'down')
  throw asTargonError(error).with({data: {deleted}})
}

async function startAndFollow(client: TargonClient, state: LocalState, vm: KnownVm, options: RunJobOptions): Promise<JobOutcome> {
  const clock = options.clock
  const name = vm.name ?? vm.uid
  // The local walk of the sync runs while the connection opens; its failure is the sync's to report.
  const walked = options.sync ? walkLocal(options.localDir, {neverSent: options.neverSent}) : undefined
  walked?.catch(() => undefined)
  const session = (await openVm(vm, options)).session
  const opened: SshSession[] = []
  try {
    // The sampler is updated over its own channel while the sync runs; both are done before the job starts.
    const sampler = updateSampler(session, name, options)
    const workId = workdirIdOf(options.localDir)
    const remoteDir = posix.join(WORK_ROOT, workId)
    let sync: JobOutcome['sync'] = null
    // The sync's manifest is written while the job starts: the files are in place. Its failure costs only the next
    // sync's work (it sends these files again), so it is a warning once the job runs.
    let manifest = Promise.resolve()
    try {
      if (options.sync) {
        options.info(`Syncing ${options.localDir} to ${name}:${remoteDir}`)
        const synced = await syncWorkdir(session, {
          localDir: options.localDir,
          manifestPath: posix.join(SYNC_MANIFESTS, `${workId}.json`),
          neverSent: options.neverSent,
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
    // What jobs fetch and jobs wait go by, rather than by what the VM later says of the job.
    await saveJobRecord(options.configDir, record)
    // A --down job is recorded here before it starts, whether or not the run follows it: a sweep (down --jobs-done)
    // reads the VM's jobs when its record names one, so the VM still goes after the job when this run stops early
    // (killed, or cut off), even in the second the start takes. A job that never started is no ended job there.
    if (options.down && vm.record) {
      const updated = state.updateVm(options.org, vm.record.name, {down_job: record.id})
      // The VM carries it in its limits too; its own job record (down: true) says the same to a guard that reads jobs.
      const problem = updated ? await carryLimits(session, limitsFile(updated, vm.owner ?? null, clock.now())) : null
      if (problem)
        options.warn(
          `the job's --down could not be written into the limits the VM carries (${problem}); its job record on the VM still says it`,
        )
    }
    const reopen = () => reopenVm(client, state, vm, {...options, targets: []})
    const starting = startJob(session, record, options.env, reopen, !options.detach).catch(async (error: unknown) => {
      // Only a start the VM refused surely did not start (a lost answer may have): no record of it stays here either.
      if (isTargonError(error) && error.code === 'REMOTE_COMMAND_FAILED') await forgetJobRecord(options.configDir, record.id)
      throw error
    })
    const [{firstLook, session: following}] = await Promise.all([starting, manifest])
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
    const result: JobOutcome = {
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
        `this config directory holds no record of ${name}: no sweep from it deletes the VM when job ${record.id} ends; run ${laterCommand(['jobs', 'wait', record.id], options)} (or down --jobs-done) once it has`,
      )
    // --detach: the job is started, and the rest is left to jobs wait, or with --down to that sweep.
    if (options.detach) return result
    return await completeJob({client, record, result, session: following, state, vm}, {...options, firstLook, reopen})
  } finally {
    session.close()
    for (const other of opened) other.close()
  }
}

/** The VM that WORD names; else, when `targon run` may rent (WORD names an offer, or --gpu), the one it rents. */
async function findVm(client: TargonClient, state: LocalState, options: RunJobOptions): Promise<{vm: KnownVm; rented: boolean}> {
  try {
    if (options.word === null) throw new TargonError('NOT_FOUND', 'no VM named')
    // Where `targon run` may rent, a WORD that names a VM must name no offer: the offers are read while the VMs are listed.
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
async function updateSampler(session: SshSession, name: string, options: Pick<RunJobOptions, 'info' | 'warn'>): Promise<void> {
  try {
    if ((await updateIdleSampler(session)) === 'updated')
      options.info(`Updated the idle sampler on ${name}: a running job now counts as activity`)
  } catch (error) {
    options.warn(
      `${name}: the idle sampler could not be updated (${asTargonError(error).message}); its idle limit may delete it while the job runs`,
    )
  }
}
