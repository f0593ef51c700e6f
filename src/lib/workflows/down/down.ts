/**
 * `targon down`: select from the API's listing (local state only adds), delete with bounded
 * concurrency until nothing selected bills (deletion/delete-workloads.ts), verify against a fresh listing, and
 * tidy local state for what no longer bills.
 */

import type {TargonClient} from '../../adapters/targon/client.js'
import {workloadStatus} from '../../adapters/targon/schemas.js'
import {TargonError, abortError} from '../../core/errors.js'
import {
  type FleetView,
  type KnownVm,
  billingOfTool,
  billingUncertain,
  invalidWarning,
  outsideOwner,
  readFleet,
  vmFacts,
} from '../../domain/fleet/fleet-read.js'
import {type OwnerScope, outsideWarning, refuseMixedOwners} from '../../domain/fleet/owners.js'
import {notFoundHint, suggestVmName, whereToLook} from '../../domain/fleet/suggest.js'
import {judge} from '../../domain/deletion/lifecycle.js'
import {countOf} from '../../core/output.js'
import {forgetVm} from '../../domain/deletion/forget.js'
import type {LocalState, VmRecord} from '../../adapters/state/local-state.js'
import {type DeleteTarget, type DeletionEvent, deleteWorkloads} from '../../domain/deletion/delete-workloads.js'
import {vmRef} from '../../adapters/events/run-events.js'
import type {DeleteReason, DeleteResult, DstackLeaveOutcome} from '../../domain/deletion/schema.js'
import type {EndedJob, HookOutcome} from '../../adapters/events/schema.js'
import type {DownResult} from './schema.js'
import {DEFAULT_HOOK_TIMEOUT_MS, hookSummary, runHooks} from '../../domain/hooks/hook.js'
import {type DstackLeave, leaveDstack} from '../dstack/leave.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import {type DownSelection, chooseTargets, isBulk, limitReached} from './selection.js'
import {keepUnlessIdle} from './idle-selection.js'
import {type RunningJobsReader, endedJobsInWords, readRunningJobs} from './ended-jobs.js'
import type {DeletionRun} from '../run-context.js'
import {limitsOf, readLimitsOnVms} from '../../domain/fleet/limits.js'
import {VmSessions} from '../../domain/fleet/vm-sessions.js'

const STALE_INTENT_MS = 60 * 60_000

/** What was chosen and kept, and which of the chosen were just judged idle on their VM (so run no job of targon run). */
export interface Narrowed {
  chosen: KnownVm[]
  kept: DownResult['kept']
  idleUids?: Set<string>
}

export interface DownOptions {
  selection: DownSelection
  dryRun: boolean
  ignoreMissing: boolean
  /** Deletions in flight at once (at most 8). */
  parallel: number
  /** Deploy registered leftovers briefly, so that Targon deletes them. */
  wakeRegistered: boolean
  /** Asked before a bulk deletion on a terminal; false aborts. */
  confirm: (vms: KnownVm[]) => Promise<boolean>
  /**
   * Asked before VMs named by uid that belong to another owner than the run's (or whose owner could not be read) are
   * deleted without --any-owner: true goes ahead (--yes, or a yes on the terminal that names their owners), false
   * aborts, undefined means nobody can be asked (cron, --events ndjson): refused. Absent where the caller chose the
   * VMs itself (run --down of its job's VM, the sweep's selection).
   */
  confirmOthers?: (vms: KnownVm[]) => Promise<boolean | undefined>
  /** The fleet whose --name labels name VMs (the configured one). */
  labelFleet: string
  /** How long an unclear DELETE is reconciled before it is sent again (the reconcile-window setting). */
  reconcileMs: number
  /** Every uid about to be deleted, before the first DELETE. */
  onTargets?: (targets: DeleteTarget[]) => void
  onResult?: (result: DeleteResult) => void
  /** Each deletion's course (see deleteWorkloads). */
  onEvent?: (event: DeletionEvent) => void
  /**
   * What of this tool still bills in the selection's fleet after the run (see billingOfTool): from the final listing,
   * else (`fromListing` false: it failed) from the first one, less what the run settled.
   */
  onStillBilling?: (uids: string[], fromListing: boolean) => void
  /** Where the project key and the pins are, for --idle's probes. */
  configDir: string
  /**
   * The last say over what the selectors chose (targon sweep's policies): what is deleted, and what is kept and why.
   * Without it, --idle decides, else every chosen VM is deleted.
   */
  narrow?: (chosen: KnownVm[], view: FleetView, sessions: VmSessions) => Promise<Narrowed>
  /** Run each VM's pre-delete hook before deleting it (false: --no-hooks). Never under --dry-run. */
  hooks: boolean
  /** Why each VM is deleted, for its hook's TARGON_DELETE_REASON; without it, the selection says. */
  reasonOf?: (vm: KnownVm) => DeleteReason
  /**
   * Keep the records of VMs the listing does not show, which --all and --fleet otherwise remove as stale: a sweep
   * runs unattended and often, and one odd listing must never cost a VM its limits.
   */
  keepUnlistedRecords?: boolean
  /** This run's --hook-timeout in seconds, over the one each VM's record keeps; absent: the recorded one. */
  hookTimeoutS?: number
  /** The longest any hook may run in this run (a sweep's cap, as it holds its lock meanwhile); absent: no cap. */
  hookTimeoutCapS?: number
  /**
   * What ends the hooks, when it is not the run's signal: a deletion that an interrupt must not stop (run --down's)
   * still lets one stop its hook at once, and delete.
   */
  hookStop?: AbortSignal
  /**
   * Reads the jobs of targon run running on a VM about to be deleted, so that its result names what the deletion ends
   * (ended_jobs); absent: not read. Bounded here in time, and never a reason to keep a VM.
   */
  runningJobs?: RunningJobsReader
  /**
   * The dstack server of the run, when one is configured: each VM leaves its targon-* dstack fleet before its deletion
   * (a host with a dstack job is waited for within the hook budget, unless forced). Never a reason to keep a VM.
   */
  dstack?: DstackLeave
}

/**
 * A typed name or uid that the listing does not show: gone if this machine deleted it (its delete note) or has a
 * record of it; a workload if the API still answers for it; otherwise NOT_FOUND, so that a typo never passes
 * for "already gone" while the intended VM keeps billing.
 */
async function resolveUnlisted(
  client: TargonClient,
  org: string,
  state: LocalState,
  target: string,
  ignoreMissing: boolean,
  suggestion: string | undefined,
  scope: OwnerScope,
): Promise<DeleteTarget | undefined> {
  const record = state.listVms(org).records.find((each) => each.uid === target || each.name === target)
  const uid = record?.uid ?? target
  if (state.readDeleteNote(org, uid)) return {name: record?.name ?? null, status: 'not-found', uid}
  // A record says this machine created it, not that it is gone: the listing may lag, so ask for it.
  try {
    const status = workloadStatus({state: await client.getWorkloadState(org, uid)})
    return {name: record?.name ?? null, status, uid}
  } catch (error) {
    if (!(error instanceof TargonError && error.code === 'NOT_FOUND')) throw error
  }

  if (record) return {name: record.name, status: 'not-found', uid}
  if (ignoreMissing) return undefined
  throw new TargonError('NOT_FOUND', `no VM named or with uid ${target}`, {
    hint: notFoundHint(suggestion, `check the name with ${whereToLook(scope)}, or pass --ignore-missing`),
  })
}

/** What the selection chooses from the listing (by the limits read over `sessions`), and what the last say keeps of it. */
async function selectVms(
  run: DeletionRun,
  view: FleetView,
  sessions: VmSessions,
  options: DownOptions,
): Promise<{decided: Narrowed; unlisted: string[]}> {
  const {selection} = options
  const {clock} = run
  // --idle alone reads them over each probe's connection, right before the probe.
  if (selection.expired) await readLimitsOnVms(view.vms, sessions, {configDir: options.configDir, signal: run.signal})
  const {chosen, unlisted} = chooseTargets(view.vms, options.selection, options.labelFleet, clock.now())
  await consentForOthers(chosen, options)
  if (isBulk(options.selection)) {
    const scope: OwnerScope = {anyOwner: options.selection.any_owner, owner: options.selection.owner}
    refuseMixedOwners(
      chosen.map((vm) => ({owner: vm.owner, uncertain: billingUncertain(vm)})),
      scope,
    )
    // Whatever of this tool bills outside the owner's VMs is said, so that a shared org never keeps billing in silence.
    const outside = outsideOwner(view.vms, scope)
    const note = outsideWarning(outside.billing, scope, outside.unknown)
    if (note) run.warn(note)
  }
  // --idle probes each VM the other selectors chose; only one idle past its limit is deleted, the rest are kept.
  const decided: Narrowed = options.narrow
    ? await options.narrow(chosen, view, sessions)
    : selection.idle
      ? await keepUnlessIdle(run, chosen, {...options, sessions}).then((idle) => ({
          ...idle,
          idleUids: new Set(idle.chosen.map((vm) => vm.uid)),
        }))
      : {chosen, kept: []}
  return {decided, unlisted}
}

export async function runDown(
  run: DeletionRun,
  client: TargonClient,
  cleanupClient: TargonClient,
  org: string,
  state: LocalState,
  options: DownOptions,
): Promise<DownResult> {
  const {selection} = options
  const {clock} = run
  const view = await readFleet(client, org, state, {
    clock,
    historyBudget: run.historyBudget,
    readOwners: isBulk(selection) || selection.owner !== null,
  })
  recordFleetRead(state, org, view, clock)
  for (const problem of view.problems) run.warn(problem)
  const listed = new Set(view.vms.map((vm) => vm.uid))
  state.pruneDeleteNotes(org, listed, clock.now())
  state.pruneHistoryVerdicts(org, listed, clock.now())
  // Limits travel with the VMs: --expired and --idle go by the stricter of each VM's file and this directory's record,
  // read over the connections --idle's probes then use; they all end before the first deletion.
  const sessions = new VmSessions({clock, configDir: options.configDir, signal: run.signal})
  const {decided, unlisted} = await selectVms(run, view, sessions, options).finally(() => sessions.closeAll())
  const {kept} = decided
  const targets: DeleteTarget[] = decided.chosen.map((vm) => ({
    createdAt: vm.workload.created_at ?? null,
    facts: vmFacts(vm),
    name: vm.name,
    status: vm.status,
    uid: vm.uid,
  }))
  for (const target of unlisted) {
    const scope: OwnerScope = {anyOwner: selection.any_owner, owner: selection.owner}
    const suggestion = suggestVmName(target, view.vms, selection.fleet ?? options.labelFleet, scope)
    const resolved = await resolveUnlisted(client, org, state, target, options.ignoreMissing, suggestion, scope)
    if (resolved) targets.push(resolved)
  }

  // A listed item that failed the API checks may bill, but nothing can tell whose it is: a bulk selector never deletes
  // it, it is reported, and it keeps the exit non-zero; naming its exact uid deletes it (a target above). A sweep
  // (narrow) reports it as down --expired does. Under --idle they are not idle VMs selected: the exit code is the idle
  // VMs' alone.
  const invalid: DeleteResult[] =
    isBulk(options.selection) && !options.selection.idle
      ? view.invalid
          .filter((item) => !targets.some((target) => target.uid === item.uid))
          .map((item) => ({action: 'invalid-answer', billing: null, error: item.problem, name: null, uid: item.uid ?? '(none)'}))
      : []
  if (invalid.length > 0) run.warn(invalidWarning(view.invalid))
  const deletedListed = isBulk(selection)
    ? chooseTargets(view.vms, {...selection, tombstones: true}, options.labelFleet, clock.now()).chosen
    : []
  const base = {
    deleted_listed: deletedListed.map((vm) => ({name: vm.name, uid: vm.uid})),
    dry_run: options.dryRun,
    kept,
    org,
    selection: options.selection,
  }
  // What each deletion ends: the jobs of targon run read on its VM just before it (after its hook), by uid.
  const ended = new Map<string, EndedJob[] | null>()
  // A VM its idle probe just judged idle runs no job (a running job is activity to the sampler): not read again.
  for (const uid of decided.idleUids ?? []) ended.set(uid, [])
  const readEnded = async (vms: KnownVm[]) => {
    const unread = vms.filter((vm) => !ended.has(vm.uid))
    for (const [uid, jobs] of await readRunningJobs(run, unread, options)) ended.set(uid, jobs)
  }
  const statusOf = new Map(targets.map((target) => [target.uid, target.status]))
  const withEnded = (result: DeleteResult): DeleteResult => {
    if (!options.runningJobs) return result
    const status = statusOf.get(result.uid)
    // A VM that was not running has no job of targon run: its units do not outlive it.
    const jobs = ended.has(result.uid) ? (ended.get(result.uid) ?? null) : status === undefined || status === 'running' ? null : []
    return {...result, ended_jobs: jobs}
  }
  const pending = decided.chosen.filter((vm) => !vm.gone)
  if (options.dryRun) {
    await readEnded(pending)
    const plan = targets.map((target) => {
      const verdict = judge(target.status ?? 'unknown', state.readDeleteNote(org, target.uid))
      return withEnded({
        action: verdict.gone ? ('already-gone' as const) : ('would-delete' as const),
        billing: verdict.billing,
        name: target.name,
        uid: target.uid,
      })
    })
    return {...base, results: [...plan, ...invalid], survivors: []}
  }

  if (pending.length > 0 && !(await options.confirm(pending))) {
    throw new TargonError('USAGE', 'deletion not confirmed; nothing was deleted', {hint: 'answer y, or pass --yes'})
  }

  options.onTargets?.(targets)
  const interruptedBefore = run.signal.aborted
  // After an interrupt no hook starts: the VMs are deleted at once.
  const runsHooks = options.hooks && !interruptedBefore && options.hookStop?.aborted !== true
  const hooked = runsHooks ? pending.filter((vm) => limitsOf(vm).on_delete_hook) : ([] as KnownVm[])
  const hookedUids = new Set(hooked.map((vm) => vm.uid))
  // A hook's flag lives in the record of the directory that ran up: without one, whether the VM has a hook is not
  // known here. The VM is deleted all the same (nothing optional stops a deletion), and that is said.
  const unknownHere = runsHooks ? pending.filter((vm) => vm.record === undefined) : []
  if (unknownHere.length > 0)
    run.warn(
      `${unknownHere.map((vm) => vm.name ?? vm.uid).join(', ')}: no record in this config directory, so any pre-delete hook is not known here and is not run`,
    )
  let hooks = new Map<string, HookOutcome>(
    unknownHere.map((vm) => [
      vm.uid,
      {
        detail: 'no record of it in this config directory: whether it has a hook is not known here',
        duration_ms: 0,
        exit_code: null,
        output_tail: '',
        status: 'unknown-here',
      },
    ]),
  )
  // What each VM's leaving dstack did, by uid: said in its result.
  const leftDstack = new Map<string, DstackLeaveOutcome>()
  const withHook = (result: DeleteResult): DeleteResult => {
    const dstack = leftDstack.get(result.uid)
    return withEnded({
      ...result,
      ...(hooks.has(result.uid) && {hook: hooks.get(result.uid)}),
      ...(dstack !== undefined && {dstack}),
    })
  }
  const withEndedEvent = (event: DeletionEvent): DeletionEvent => {
    const jobs = event.status === 'done' && event.vm.uid !== null ? ended.get(event.vm.uid) : undefined
    return jobs && jobs.length > 0 ? {...event, detail: `${event.detail}; ${endedJobsInWords(jobs)}`, ended_jobs: jobs} : event
  }
  const deleteBatch = (batch: DeleteTarget[], stop: AbortSignal) =>
    deleteWorkloads(cleanupClient, org, state, batch, {
      clock,
      concurrency: options.parallel,
      onEvent: options.onEvent && ((event) => options.onEvent?.(withEndedEvent(event))),
      onResult: options.onResult && ((result) => options.onResult?.(withHook(result))),
      reconcileMs: options.reconcileMs,
      stop,
      wakeRegistered: options.wakeRegistered,
    })
  // The VMs without a hook do not wait for the others' hooks: their deletions start at once. A signal during the hooks
  // ends them and deletes at once, so while hooks run it does not hold these back either.
  // Each VM leaves dstack's fleet before it is deleted, within the budget its hook would have.
  const leave = async (vms: KnownVm[]) => {
    if (!options.dstack) return
    for (const [uid, outcome] of await leaveDstack(run, options.dstack, vms, dstackWaitMs(vms, options))) leftDstack.set(uid, outcome)
  }
  const unhooked = (async () => {
    await readEnded(pending.filter((vm) => !hookedUids.has(vm.uid)))
    await leave(pending.filter((vm) => !hookedUids.has(vm.uid)))
    // A signal during that reading ends it and deletes at once, as one during the hooks does.
    const interruptedReading = run.signal.aborted && !interruptedBefore
    return deleteBatch(
      targets.filter((target) => !hookedUids.has(target.uid)),
      hooked.length > 0 || interruptedReading ? new AbortController().signal : run.signal,
    )
  })()
  const hookedDone = (async () => {
    if (hooked.length === 0) return []
    hooks = new Map([...hooks, ...(await runPreDeleteHooks(run, hooked, options))])
    // After the hooks: a job a hook ended is not one the deletion ends.
    await readEnded(hooked)
    await leave(hooked)
    // After the unhooked batch too, so that no more than --parallel deletions are in flight at once.
    await unhooked
    const deletionStop = run.signal.aborted ? new AbortController().signal : run.signal
    return deleteBatch(
      targets.filter((target) => hookedUids.has(target.uid)),
      deletionStop,
    )
  })()
  const byUid = new Map((await Promise.all([unhooked, hookedDone])).flat().map((result) => [result.uid, withHook(result)]))
  const results = [...new Set(targets.map((target) => target.uid))].flatMap((uid) => {
    const result = byUid.get(uid)
    return result ? [result] : []
  })
  // Verify against a fresh listing: what still bills there is not gone, whatever the answers said. Without a listing,
  // the per-VM results (each already confirmed by its state) stand.
  const final = await readFleet(cleanupClient, org, state, {
    clock,
    historyBudget: run.historyBudget,
    readOwners: selection.owner !== null,
  }).catch((error: unknown) => {
    run.warn(`the final listing failed (${(error as Error).message}); the results are not verified against it`)
    return undefined
  })
  if (final) recordFleetRead(state, org, final, clock)
  const after = new Map((final?.vms ?? []).map((vm) => [vm.uid, vm]))
  const verified = results.map((result): DeleteResult =>
    result.billing === false && bills(after.get(result.uid)) ? {...result, action: 'still-present', billing: true} : result,
  )
  tidyLocalState(state, org, verified, options.keepUnlistedRecords ? [] : view.localOnly, options.selection, clock.now())
  const settledUids = new Set(verified.filter((each) => each.billing === false).map((each) => each.uid))
  options.onStillBilling?.(
    billingOfTool(final?.vms ?? view.vms, selection.fleet, selection.owner).filter((uid) => final !== undefined || !settledUids.has(uid)),
    final !== undefined,
  )
  verified.push(...invalid)

  const survivors = verified.filter((result) => result.billing !== false).map((result) => result.uid)
  const result: DownResult = {...base, results: verified, survivors}
  if (run.signal.aborted) {
    const reason = abortError(run.signal)
    throw new TargonError(
      'INTERRUPTED',
      `${reason.message}; ${survivors.length === 0 ? 'nothing selected still bills' : `still billing: ${survivors.join(', ')}`}`,
      {
        data: result,
        hint: survivors.length === 0 ? undefined : `run targon down ${survivors.join(' ')}`,
        signal: reason instanceof TargonError ? reason.signal : undefined,
      },
    )
  }

  if (survivors.length > 0) {
    throw new TargonError(
      'PARTIAL_FAILURE',
      `${survivors.length} of ${countOf(verified.length, 'VM')} still ${survivors.length === 1 ? 'bills' : 'bill'}: ${survivors.join(', ')}`,
      {
        data: result,
        hint: `run targon down ${survivors.join(' ')} again; if it persists, contact Targon support`,
      },
    )
  }

  return result
}

/** The hooks of the VMs about to be deleted, each outcome said as a progress event of its deletion (its `hook`). */
function runPreDeleteHooks(run: DeletionRun, vms: KnownVm[], options: DownOptions) {
  const {selection} = options
  const now = run.clock.now()
  const reasonOf =
    options.reasonOf ??
    ((vm: KnownVm): DeleteReason =>
      selection.idle
        ? 'idle'
        : selection.expired
          ? (limitReached(vm, now) ?? 'down')
          : selection.over_cost_usd !== null
            ? 'over-cost'
            : 'down')
  return runHooks(vms, reasonOf, {
    clock: run.clock,
    configDir: options.configDir,
    timeoutCapS: options.hookTimeoutCapS ?? null,
    timeoutS: options.hookTimeoutS ?? null,
    onOutcome: (vm, hook) => {
      const tail = hook.output_tail === '' ? '' : `; its output ends:\n${hook.output_tail}`
      options.onEvent?.({detail: `${vm.name ?? vm.uid}: ${hookSummary(hook)}${tail}`, hook, status: 'progress', vm: vmRef(vm.uid, vm.name)})
      if (hook.status !== 'ok') run.warn(`${vm.name ?? vm.uid}: ${hookSummary(hook)}; deleting it all the same`)
    },
    parallel: options.parallel,
    signal: options.hookStop ? AbortSignal.any([run.signal, options.hookStop]) : run.signal,
  })
}

/** How long a deletion waits for a dstack job on its VMs: the longest hook budget among them (this run's, else each record's). */
function dstackWaitMs(vms: KnownVm[], options: DownOptions): number {
  const budgetS = (vm: KnownVm) => options.hookTimeoutS ?? vm.record?.hook_timeout_s ?? DEFAULT_HOOK_TIMEOUT_MS / 1000
  const longestS = Math.max(0, ...vms.map((vm) => budgetS(vm)))
  return Math.min(longestS, options.hookTimeoutCapS ?? longestS) * 1000
}

/**
 * Whether the final listing shows a VM billing, on evidence: an `error` record of unknown billing may be the tombstone
 * of a delete made elsewhere, and cannot overrule a result.
 */
function bills(vm: KnownVm | undefined): boolean {
  return vm?.billing === true
}

/** Removes the records (with their host-key pins) of VMs that no longer bill, and stale records of the selected fleet. */
function tidyLocalState(
  state: LocalState,
  org: string,
  results: DeleteResult[],
  localOnly: VmRecord[],
  selection: DownSelection,
  now: number,
): void {
  const settled = new Set(results.filter((result) => result.billing === false).map((result) => result.uid))
  for (const uid of settled) forgetVm(state, org, uid)

  if (selection.all || selection.fleet !== null) {
    for (const record of localOnly) {
      // A record without a uid may belong to an `up` that is creating its VM right now.
      const stale = record.uid !== null || now - Date.parse(record.created_at) > STALE_INTENT_MS
      if (stale && (selection.fleet === null || record.fleet === selection.fleet)) state.removeVm(org, record.name)
    }
  }
}

/**
 * A colleague's VM never goes without a word: with an owner set and without --any-owner, VMs named by uid that belong
 * to another owner (or whose owner could not be read) are deleted only with consent that names their owners.
 */
async function consentForOthers(chosen: KnownVm[], options: DownOptions): Promise<void> {
  const {any_owner: anyOwner, owner, targets} = options.selection
  if (!options.confirmOthers || anyOwner || owner === null || targets.length === 0) return
  const others = chosen.filter((vm) => vm.owner !== owner && vm.owner !== null)
  if (others.length === 0) return
  const answer = await options.confirmOthers(others)
  if (answer === true) return
  if (answer === false) throw new TargonError('USAGE', 'deletion not confirmed; nothing was deleted', {hint: 'answer y, or pass --yes'})
  throw new TargonError('USAGE', `${othersInWords(others)}, not to owner ${owner}`, {
    hint: 'ask its owner, or pass --any-owner (or --yes) to delete it all the same',
  })
}

/** "wrk-1 belongs to owner alice; wrk-2 to an owner that could not be read" */
export function othersInWords(others: KnownVm[]): string {
  return others
    .map(
      (vm, index) =>
        `${vm.name ?? vm.uid}${index === 0 ? ' belongs' : ''} to ${typeof vm.owner === 'string' ? `owner ${vm.owner}` : 'an owner that could not be read'}`,
    )
    .join('; ')
}
