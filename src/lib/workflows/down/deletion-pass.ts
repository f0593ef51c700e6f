/**
 * The deletion pass of a down, once its VMs are chosen and consented to: each VM's pre-delete hook, its leaving of
 * dstack's fleet and the reading of the jobs its deletion ends, then its DELETE until it no longer bills. The VMs
 * without a hook are deleted at once, those with one after it; an interrupt starts no further hook and deletes at once.
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import {vmRef} from '../../adapters/events/run-events.js'
import type {HookOutcome} from '../../adapters/events/schema.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import {type DeleteTarget, deleteWorkloads} from '../../domain/deletion/delete-workloads.js'
import type {DeleteReason, DeleteResult, DstackLeaveOutcome} from '../../domain/deletion/schema.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {limitsOf} from '../../domain/fleet/limits.js'
import {DEFAULT_HOOK_TIMEOUT_MS, hookSummary, runHooks} from '../../domain/hooks/hook.js'
import {leaveDstack} from '../dstack/leave.js'
import type {DeletionRun} from '../run-context.js'
import type {EndedJobs} from './ended-jobs.js'
import type {DownOptions} from './options.js'
import {limitReached} from './selection.js'

/** Deletes `targets` (`pending`: those of them listed and not gone), and gives each one's result, in their order. */
export async function deleteSelected(
  run: DeletionRun,
  cleanupClient: TargonClient,
  org: string,
  state: LocalState,
  selected: {targets: DeleteTarget[]; pending: KnownVm[]; ended: EndedJobs},
  options: DownOptions,
): Promise<DeleteResult[]> {
  const {targets, pending, ended} = selected
  const {clock} = run
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
    return ended.inResult({
      ...result,
      ...(hooks.has(result.uid) && {hook: hooks.get(result.uid)}),
      ...(dstack !== undefined && {dstack}),
    })
  }
  const deleteBatch = (batch: DeleteTarget[], stop: AbortSignal) =>
    deleteWorkloads(cleanupClient, org, state, batch, {
      clock,
      concurrency: options.parallel,
      onEvent: options.onEvent && ((event) => options.onEvent?.(ended.inEvent(event))),
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
    await ended.read(pending.filter((vm) => !hookedUids.has(vm.uid)))
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
    await ended.read(hooked)
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
  return results
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
    connectMs: options.connectMs,
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
