/**
 * What a down deletes: the VMs its selection chooses from the listing (and what the last say keeps of them), another
 * owner's only with consent, and the names or uids the listing does not show, each resolved or refused.
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import {workloadStatus} from '../../adapters/targon/schemas.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import {TargonError} from '../../core/errors.js'
import type {DeleteTarget} from '../../domain/deletion/delete-workloads.js'
import {type FleetView, type KnownVm, billingUncertain, outsideOwner, vmFacts} from '../../domain/fleet/fleet-read.js'
import {readLimitsOnVms} from '../../domain/fleet/limits.js'
import {type OwnerScope, outsideWarning, refuseMixedOwners} from '../../domain/fleet/owners.js'
import {notFoundHint, suggestVmName, whereToLook} from '../../domain/fleet/suggest.js'
import {VmSessions} from '../../domain/fleet/vm-sessions.js'
import type {DeletionRun} from '../run-context.js'
import {keepUnlessIdle} from './idle-selection.js'
import type {DownOptions, Narrowed} from './options.js'
import {chooseTargets, isBulk, scopeOf} from './selection.js'

/** What the run deletes, in order: the VMs chosen from the listing, then the named ones it does not show. */
export async function selectTargets(
  run: DeletionRun,
  client: TargonClient,
  org: string,
  state: LocalState,
  view: FleetView,
  options: DownOptions,
): Promise<{decided: Narrowed; targets: DeleteTarget[]}> {
  const {selection} = options
  // Limits travel with the VMs: --expired and --idle go by the stricter of each VM's file and this directory's record,
  // read over the connections --idle's probes then use; they all end before the first deletion.
  const sessions = new VmSessions({clock: run.clock, configDir: options.configDir, connectMs: options.connectMs, signal: run.signal})
  const {decided, unlisted} = await selectVms(run, view, sessions, options).finally(() => sessions.closeAll())
  const targets: DeleteTarget[] = decided.chosen.map((vm) => ({
    createdAt: vm.workload.created_at ?? null,
    facts: vmFacts(vm),
    name: vm.name,
    status: vm.status,
    uid: vm.uid,
  }))
  const scope = scopeOf(selection)
  for (const target of unlisted) {
    const suggestion = suggestVmName(target, view.vms, selection.fleet ?? options.labelFleet, scope)
    const resolved = await resolveUnlisted(client, org, state, target, options.ignoreMissing, suggestion, scope)
    if (resolved) targets.push(resolved)
  }

  return {decided, targets}
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
    const scope = scopeOf(options.selection)
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
