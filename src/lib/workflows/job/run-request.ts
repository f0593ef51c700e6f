/**
 * `targon run` from its parsed request to its outcome: the local working directory checked, the dry run's plan, the
 * settings the run reads before it connects, and the job itself (run-job.ts), on a VM the request names or rents.
 */
import {stat} from 'node:fs/promises'
import {resolve} from 'node:path'

import type {RunContext} from '../run-context.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {TargonError} from '../../core/errors.js'
import {type OwnerScope, ownerScope} from '../../domain/fleet/owners.js'
import type {CopyLimit} from '../copy/budget.js'
import type {RunPlace} from '../later-command.js'
import {type NeverSentDir, neverSentDirs} from '../sync/held-back.js'
import type {JobFollowing} from './complete.js'
import {storeLimit} from './job-store.js'
import {rentForJob} from './rent.js'
import {type RunJobOptions, runJob} from './run-job.js'
import type {JobOutcome, JobPlan} from './schema.js'
import {checkWorkdir, planSync} from './workdir.js'

/** What a VM that `targon run` rents is asked for (up's flags of the same names). */
export interface RentTerms {
  maxPrice: number
  gpu?: string
  idleMs?: number
  maxCostUsd?: number
  ttlMs?: number
  waitMs?: number
}

/** `targon run` as asked: its flags, positionals and settings, checked (cli/requests/run.ts). */
export interface JobRequest {
  /** The VM (or offer) as named; null with --gpu. */
  word: string | null
  /** The one line the remote shell runs. */
  command: string
  /** The --out paths, checked and normalized. */
  out: string[]
  env: {name: string; value: string}[]
  /** --workdir as given; undefined: the current directory. */
  workdir: string | undefined
  sync: boolean
  dryRun: boolean
  detach: boolean
  down: boolean
  hooks: boolean
  fleet: string
  /** With a price cap, a VM is rented when the word names none; null: the job runs only on an existing VM. */
  rent: RentTerms | null
}

/** The local side of a job: the directory to sync and run in, and what the sync never sends. */
export interface LocalWorkdir {
  localDir: string
  neverSent: readonly NeverSentDir[]
}

/** The local working directory: it must exist, and one that is synced must not be a home directory or / unless named. */
export async function localWorkdir(
  run: Pick<RunContext, 'settings'>,
  request: Pick<JobRequest, 'sync' | 'workdir'>,
): Promise<LocalWorkdir> {
  const localDir = resolve(request.workdir ?? '.')
  const found = await stat(localDir).catch(() => undefined)
  if (!found?.isDirectory())
    throw new TargonError('NOT_FOUND', `${localDir}: no such directory`, {hint: '--workdir names the local directory to sync'})
  const neverSent = neverSentDirs([run.settings.dir, run.settings.defaultDir])
  if (request.sync) await checkWorkdir(localDir, request.workdir !== undefined, neverSent)
  return {localDir, neverSent}
}

/** run --dry-run: what the sync would send and hold back; nothing is rented, connected to or sent. */
export async function planJob(request: JobRequest, workdir: LocalWorkdir): Promise<JobPlan> {
  return {
    command: request.command,
    dry_run: true,
    out: request.out,
    sync: request.sync ? await planSync(workdir.localDir, workdir.neverSent) : null,
    vm: request.word,
  }
}

/** A job ready to run: its request and directory, with the settings read before the run connects. */
export interface PreparedJob {
  request: JobRequest
  workdir: LocalWorkdir
  owners: OwnerScope
  fetchLimit: CopyLimit
  /** Where the run was made, for the commands it prints to paste later. */
  place: Required<RunPlace>
}

export async function prepareJob(run: Pick<RunContext, 'settings'>, request: JobRequest, workdir: LocalWorkdir): Promise<PreparedJob> {
  const owners = await ownerScope(run.settings, false)
  const fetchLimit = storeLimit(await run.settings.get('job-store-limit'))
  const place = {configDir: run.settings.dir, fleet: request.fleet, profile: (await run.settings.profile()).name}
  return {fetchLimit, owners, place, request, workdir}
}

/** What the command shows of the job as it goes. */
export type JobListeners = Pick<JobFollowing, 'info' | 'onDeleted' | 'onDeletion' | 'onLine'> & Pick<RunJobOptions, 'onStarted'>

/** The job on the VM its word names, or on one rented for it; `signal` is the interrupt of the command's API work. */
export async function runPreparedJob(
  run: RunContext,
  client: TargonClient,
  signal: AbortSignal,
  job: PreparedJob,
  listeners: JobListeners,
): Promise<JobOutcome> {
  const {fetchLimit, owners, place, request, workdir} = job
  const configDir = place.configDir
  const terms = request.rent
  return runJob(client, run.localState(), {
    ...listeners,
    clock: run.clock,
    command: request.command,
    configDir,
    detach: request.detach,
    down: request.down,
    env: request.env,
    fetchLimit,
    fleet: request.fleet,
    historyBudget: run.historyBudget,
    hooks: request.hooks,
    localDir: workdir.localDir,
    org: await run.org(client),
    out: request.out,
    owners,
    profile: place.profile,
    reconcileMs: await run.reconcileWindowMs(),
    connectMs: await run.sshConnectMs(),
    rent:
      terms === null
        ? undefined
        : async () =>
            rentForJob(client, {
              configDir,
              fleet: request.fleet,
              gpu: terms.gpu,
              idleMs: terms.idleMs,
              maxCostUsd: terms.maxCostUsd,
              maxPrice: terms.maxPrice,
              owner: owners.owner,
              reconcileMs: await run.reconcileWindowMs(),
              resource: request.word,
              run,
              signal,
              ttlMs: terms.ttlMs,
              waitMs: terms.waitMs,
            }),
    neverSent: workdir.neverSent,
    signal,
    sync: request.sync,
    warn: run.warn,
    word: request.word,
  })
}
