/**
 * One `targon down` as asked on the command line: its request, what it reads before it connects (the job store's
 * bound, the profile, the dstack server it leaves), the consent it asks, --jobs-done's last say over what is deleted,
 * and what its notifications need once it ends, whether it succeeded or not. A folder apart from down/, which run
 * --down and the sweep use too: this one reads jobs, and the jobs' workflows delete through down/.
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import {isTargonError, usageError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {DeleteTarget, DeletionEvent} from '../../domain/deletion/delete-workloads.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {type DstackLeave, openLeave} from '../dstack/leave.js'
import {type FetchFailingNotice, keepUnlessJobsDone} from '../job/jobs-done.js'
import {storeLimit} from '../job/job-store.js'
import {runningJobs} from '../job/running-jobs.js'
import type {RunContext} from '../run-context.js'
import {runDown} from '../down/down.js'
import type {DownResult} from '../down/schema.js'
import {type DownSelection, isBulk} from '../down/selection.js'
import {othersInWords} from '../down/targets.js'

/** What a down is asked to do, parsed from its flags and names (see cli/requests/down.ts). */
export interface DownRequest {
  selection: DownSelection
  dryRun: boolean
  /** Delete a VM that runs a dstack job without waiting for the job to end. */
  force: boolean
  /** Run each VM's pre-delete hook first (false: --no-hooks). */
  hooks: boolean
  /** This run's --hook-timeout in seconds; absent: each VM's recorded one. */
  hookTimeoutS?: number
  ignoreMissing: boolean
  /** Deletions in flight at once. */
  parallel: number
  wakeRegistered: boolean
  /** --yes: go ahead without asking. */
  yes: boolean
}

/** How the run can ask before it deletes. */
export interface Asking {
  /** Whether stdin and stderr are a terminal (not, under cron). */
  terminal: boolean
  /** --events ndjson: stderr carries only events, and no question shows. */
  eventsOnly: boolean
  /** A yes/no question on the terminal; true for yes. */
  ask: (question: string) => Promise<boolean>
}

/** What the command follows and tells of the run as it goes. */
export interface DownListeners {
  asking: Asking
  onEvent: (event: DeletionEvent) => void
  onTargets: (targets: DeleteTarget[]) => void
  onResult: (result: DeleteResult) => void
  notifyFetchFailing: (notice: FetchFailingNotice) => Promise<boolean>
}

/** What of this tool still bills in the fleet after the run, from the final listing or (it failed) the first one. */
export interface StillBilling {
  uids: string[]
  fromListing: boolean
}

/**
 * How a down ended: its result, or what failed it with the per-VM results an interrupt or a VM still billing leaves
 * (`partial`), and in both cases what still bills in the fleet when the run got to say it.
 */
export type DownOutcome =
  | {ok: true; result: DownResult; stillBilling?: StillBilling}
  | {ok: false; error: unknown; partial?: DownResult; stillBilling?: StillBilling}

/** What a down reads before it connects: its settings, and the dstack server each VM leaves (none under --dry-run). */
export interface PreparedDown {
  storeBytes: number
  profile: string
  dstack?: DstackLeave
}

export async function prepareDown(run: RunContext, request: DownRequest, trace?: (line: string) => void): Promise<PreparedDown> {
  const storeBytes = await run.settings.get('job-store-limit')
  const profile = (await run.settings.profile()).name
  const dstack = request.dryRun ? undefined : await openLeave(run, request.force, trace)
  return {dstack, profile, storeBytes}
}

/** Runs the down on `client` (see runDown), and always closes the dstack client it prepared. */
export async function runDownRequest(
  run: RunContext,
  client: TargonClient,
  request: DownRequest,
  prepared: PreparedDown,
  listeners: DownListeners,
): Promise<DownOutcome> {
  const {selection} = request
  const configDir = run.settings.dir
  const connectMs = await run.sshConnectMs()
  let stillBilling: StillBilling | undefined
  try {
    const org = await run.org(client)
    const result = await runDown(run, client, client.withSignal(undefined), org, run.localState(), {
      configDir,
      confirm: (vms) => confirmBulk(vms, !isBulk(selection), request, listeners.asking),
      confirmOthers: (vms) => confirmOthers(run, vms, request, listeners.asking),
      dryRun: request.dryRun,
      dstack: prepared.dstack,
      hooks: request.hooks,
      ...(request.hookTimeoutS !== undefined && {hookTimeoutS: request.hookTimeoutS}),
      ignoreMissing: request.ignoreMissing,
      labelFleet: await run.settings.get('fleet'),
      reconcileMs: await run.reconcileWindowMs(),
      connectMs,
      onEvent: listeners.onEvent,
      onTargets: listeners.onTargets,
      onStillBilling: (uids, fromListing) => (stillBilling = {fromListing, uids}),
      onResult: listeners.onResult,
      parallel: request.parallel,
      ...(selection.jobs_done && {
        narrow: (chosen) =>
          keepUnlessJobsDone(run, chosen, {
            configDir,
            connectMs,
            dryRun: request.dryRun,
            notifyFetchFailing: listeners.notifyFetchFailing,
            parallel: request.parallel,
            profile: prepared.profile,
            storeLimit: storeLimit(prepared.storeBytes),
          }),
        reasonOf: () => 'job-done' as const,
      }),
      runningJobs: (vm, within) => runningJobs(vm, {configDir, signal: within}),
      selection,
      wakeRegistered: request.wakeRegistered,
    })
    return {ok: true, result, stillBilling}
  } catch (error) {
    // Interrupted or still billing: the per-VM results are the result all the same (in data.results with --json).
    const data = isTargonError(error) ? (error.data as DownResult | undefined) : undefined
    return {error, ok: false, partial: data?.results ? data : undefined, stillBilling}
  } finally {
    await prepared.dstack?.handle.client.close()
  }
}

/**
 * Bulk deletion on a terminal asks first, on stderr, with --json too (--json is no consent); explicit targets,
 * --yes and non-interactive runs (cron) do not. With --events ndjson there is no prompt: --yes is needed.
 */
async function confirmBulk(vms: KnownVm[], explicitOnly: boolean, request: DownRequest, asking: Asking): Promise<boolean> {
  if (explicitOnly || request.yes || !asking.terminal) return true
  if (asking.eventsOnly)
    throw usageError('--events ndjson shows no prompt, and a bulk deletion on a terminal asks first', 'pass --yes to delete without asking')
  const names = vms.map((vm) => vm.name ?? vm.uid).join(', ')
  return asking.ask(`Delete ${countOf(vms.length, 'VM')} (${names})?`)
}

/** VMs named by uid that are another owner's: --yes goes ahead and says whose; a terminal asks, naming the owners. */
async function confirmOthers(
  run: Pick<RunContext, 'warn'>,
  vms: KnownVm[],
  request: DownRequest,
  asking: Asking,
): Promise<boolean | undefined> {
  if (request.yes) {
    run.warn(`deleting with --yes: ${othersInWords(vms)}`)
    return true
  }
  if (!asking.terminal || asking.eventsOnly) return undefined
  return asking.ask(`${othersInWords(vms)}. Delete all the same?`)
}
