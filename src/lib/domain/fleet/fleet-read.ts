/**
 * The fleet read: what exists, as the API's workload listing (the truth) joined with local records (which only add
 * passwords, TTLs and host-key pins), and the VMs it finds. Every workflow that lists the fleet reads it here.
 */
import {TargonError} from '../../core/errors.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type InvalidWorkload, type Workload, workloadPrice, workloadResourceName, workloadStatus} from '../../adapters/targon/schemas.js'
import {NAME_PREFIX, fleetOf} from './naming.js'
import {DEFAULT_FLEET} from '../../adapters/settings/table.js'
import {type OwnerScope, type VmOwner, findForOwner, ownersOfListed, scoped} from './owners.js'
import {notFoundHint, suggestVmName, whereToLook} from './suggest.js'
import {judge, meantByName} from '../deletion/lifecycle.js'
import {type HistoryAnswer, type HistoryBudget, STILL_DELETED, classifyByHistory} from '../deletion/history.js'
import type {Clock} from '../../core/clock.js'
import type {DeleteNote, LocalState, VmRecord} from '../../adapters/state/local-state.js'
import type {Listing} from '../ledger/intervals.js'
import type {VmFacts} from '../ledger/schema.js'
import type {VmLimitsRead} from '../../adapters/bootstrap/vm-limits.js'

export interface KnownVm {
  uid: string
  name: string | null
  status: string
  fleet: string | null
  /** Created by this tool: a tcli- name, or a local record. */
  owned: boolean
  /** Whose it is in a shared org (see owners.ts): null for none, undefined when unknown. Read for this tool's live VMs. */
  owner: VmOwner
  workload: Workload
  record?: VmRecord
  /** What this machine learned from deleting it, if anything. */
  note?: DeleteNote
  /** A tombstone or `deleted` record: listed for a while, but no longer a VM. */
  gone: boolean
  /** Whether it costs money now; null for an `error` record neither a delete note nor the server's history classifies. */
  billing: boolean | null
  /**
   * Made here, billing unknown: an `error` record of a VM this machine created (it has the record), never noted
   * deleted, that the history could not classify (billing stays null). It may be the tombstone of another machine's
   * delete; where safety needs it, it is treated as billing (bulk `down` deletes it, `credits` counts it as possible).
   */
  billingAssumed: boolean
  /**
   * What the server's history said of an `error` record this machine has no delete note for (deletion/history.ts):
   * `deleted` makes it gone (billing ended at endedAt), `crashed` makes it billing, `unknown` changes nothing.
   */
  history?: HistoryAnswer['kind']
  /** When billing ended, from the history's `deleted` event. */
  endedAt?: number
  /** The limits the VM carries, when a workflow read them (fleet/limits.ts: limitsOf merges them with the record's). */
  onVm?: VmLimitsRead
}

export interface FleetReadOptions {
  /** Read in full the listing items without project_id, to know their owner (see owners.ts). */
  readOwners?: boolean
  clock: Pick<Clock, 'now'>
  /** History reads left to this run (deletion/history.ts). */
  historyBudget: HistoryBudget
}

/** What one fleet read saw. */
export interface FleetView {
  /** Every listed workload, tombstones included (see KnownVm.gone). */
  vms: KnownVm[]
  /** Local records whose workload the API no longer lists. */
  localOnly: VmRecord[]
  /** Listed items that failed the boundary's checks: they may bill, and nothing is known of them. */
  invalid: InvalidWorkload[]
  problems: string[]
  /** What this listing tells the spend ledger; the workflows that list record it (ledger.ts, recordFleetRead). */
  listing: Listing
  /**
   * Uids listed in a live status: a history verdict kept of one was about an earlier `error` of it, and a later `error`
   * must be asked about anew. recordFleetRead drops those verdicts.
   */
  staleVerdicts: string[]
}

/**
 * The org's VMs joined with local state, classified once for every reader: `error` records this machine has no delete
 * note for are told apart (tombstone or crash) by the server's history (deletion/history.ts). `readOwners`: read in
 * full the listing items that come without project_id, to know their owner (see owners.ts); runs that do not scope by
 * owner leave those owners unknown. It writes no local state of its own: a workflow that lists records the listing
 * (recordFleetRead), which is how VMs made or deleted elsewhere get their start and end, and how kept history verdicts
 * the listing outdated are dropped.
 */
export async function readFleet(client: TargonClient, org: string, state: LocalState, options: FleetReadOptions): Promise<FleetView> {
  const {clock} = options
  const listedAt = clock.now()
  const {workloads, invalid} = await client.listWorkloads(org)
  const {problems, records} = state.listVms(org)
  const notes = state.deleteNotes(org)
  const byUid = new Map(records.filter((record) => record.uid).map((record) => [record.uid as string, record]))
  const vms = workloads.map((workload): KnownVm => {
    const record = byUid.get(workload.uid)
    const fleet = fleetOf(workload.name) ?? record?.fleet ?? null
    const status = workloadStatus(workload)
    const note = notes.get(workload.uid)
    const verdict = judge(status, note)
    return {
      ...verdict,
      billingAssumed: verdict.billing === null && record !== undefined,
      fleet,
      name: workload.name ?? null,
      note,
      owned: fleetOf(workload.name) !== undefined || record !== undefined,
      owner: undefined,
      record,
      status,
      uid: workload.uid,
      workload,
    }
  })
  const unclassified = vms.filter((vm) => vm.status === 'error' && !vm.gone && vm.note === undefined)
  const answers = await classifyByHistory(
    client,
    state,
    org,
    unclassified.map((vm) => vm.uid),
    {budget: options.historyBudget, clock},
  )
  for (const vm of unclassified) applyHistory(vm, answers.get(vm.uid))
  // A refused name says nothing of origin: the VM may still be ours by its owner's project (see refusedNames).
  const owners = await ownersOfListed(
    client,
    org,
    vms.filter((vm) => (vm.owned || vm.workload.name_refused) && !vm.gone).map((vm) => vm.workload),
    options.readOwners ?? false,
  )
  for (const vm of vms) vm.owner = owners.get(vm.uid)
  problems.push(...refusedNames(vms))
  const unreadable = new Set(invalid.flatMap((item) => (item.uid === null ? [] : [item.uid])))
  // A listed item that failed the checks is still listed: its record (its limits, its hook) is not a leftover.
  const live = new Set([...vms.filter((vm) => !vm.gone).map((vm) => vm.uid), ...unreadable])
  const localOnly = records.filter((record) => !record.uid || !live.has(record.uid))
  const sightings = vms.map((vm) => ({
    ...vmFacts(vm),
    billing: vm.billing,
    createdAt: vm.workload.created_at ?? null,
    gone: vm.gone,
    uid: vm.uid,
    // A tombstone known from the history ended at its `deleted` event, before the record flipped to `error`.
    updatedAt:
      vm.endedAt === undefined ? (vm.workload.updated_at ?? vm.workload.state?.updated_at ?? null) : new Date(vm.endedAt).toISOString(),
  }))
  const staleVerdicts = vms.filter((vm) => !STILL_DELETED.has(vm.status)).map((vm) => vm.uid)
  return {invalid, listing: {listedAt, sightings, unreadable}, localOnly, problems, staleVerdicts, vms}
}

/**
 * The history's answer decides what the listing could not: a tombstone is gone, a crash bills. An unknown answer (the
 * history could not tell, or was not asked within the run's budget) leaves billing null: unknown, never "billing".
 */
function applyHistory(vm: KnownVm, answer: HistoryAnswer | undefined): void {
  if (!answer) return
  vm.history = answer.kind
  if (answer.kind === 'deleted') Object.assign(vm, {billing: false, billingAssumed: false, endedAt: answer.at, gone: true})
  else if (answer.kind === 'crashed') Object.assign(vm, {billing: true, billingAssumed: false})
}

/**
 * VMs whose name broke Targon's rule at the boundary (renamed by a hostile or buggy server): known by their uid only.
 * One that is ours by its local record or its owner's project keeps its place in bulk selections (deleted by uid), so
 * a rename cannot keep it billing; any other is another origin's. Returns one warning for them all, if any.
 */
function refusedNames(vms: KnownVm[]): string[] {
  const refused = vms.filter((vm) => vm.workload.name_refused && !vm.gone)
  for (const vm of refused) if (typeof vm.owner === 'string') vm.owned = true
  const warning = refusedNamesWarning(refused)
  return warning === undefined ? [] : [warning]
}

/** At most this many uids are named in the warning about refused names; the rest are counted. */
const REFUSED_SHOWN = 5

/** What to say of VMs whose names were refused at the API boundary: one line, however many. */
export function refusedNamesWarning(vms: readonly KnownVm[]): string | undefined {
  const [only] = vms
  if (only === undefined) return undefined
  if (vms.length === 1)
    return `${only.uid} has a name that breaks Targon's naming rule: it is shown by its uid and its name is never used${only.owned ? " (it is still one of this tool's VMs)" : ''}`
  const shown = vms.slice(0, REFUSED_SHOWN).map((vm) => vm.uid)
  const more = vms.length > REFUSED_SHOWN ? ` and ${vms.length - REFUSED_SHOWN} more` : ''
  const ours = vms.filter((vm) => vm.owned).length
  return `${vms.length} VMs have names that break Targon's naming rule, shown by uid: ${shown.join(', ')}${more}; their names are never used${ours > 0 ? ` (${ours} of them this tool's VMs, still deleted by uid)` : ''}`
}

/** Whether it bills is not known: an `error` record nobody classified (billingAssumed ones included). */
export function billingUncertain(vm: KnownVm): boolean {
  return vm.billing === null
}

/**
 * What of this tool a scope leaves out: VMs known to bill, by owner, and how many records of unknown billing. Deleted
 * VMs (tombstones) are in neither.
 */
export function outsideOwner(vms: KnownVm[], scope: OwnerScope): {billing: Map<VmOwner, number>; unknown: number} {
  const mine = vms.filter((vm) => vm.owned && !vm.gone && vm.billing !== false)
  const unknown = [...scoped(mine.filter(billingUncertain), scope).outside.values()].reduce((sum, count) => sum + count, 0)
  return {
    billing: scoped(
      mine.filter((vm) => !billingUncertain(vm)),
      scope,
    ).outside,
    unknown,
  }
}

/**
 * What of this tool a listing shows known to bill in a fleet (any: null) and for an owner (any: null), by uid: the
 * `still_billing` of a notification, true to the org's listing rather than to what one run made or deleted.
 */
export function billingOfTool(vms: readonly KnownVm[], fleet: string | null, owner: string | null): string[] {
  return vms
    .filter((vm) => vm.owned && !vm.gone && vm.billing === true)
    .filter((vm) => (fleet === null || vm.fleet === fleet) && (owner === null || vm.owner === owner))
    .map((vm) => vm.uid)
}

/** What the spend ledger keeps of a VM. */
export function vmFacts(vm: KnownVm): VmFacts {
  return {
    fleet: vm.fleet,
    gpu_count: vm.workload.resource?.gpu_count ?? null,
    gpu_model: vmGpuModel(vm) ?? null,
    name: vm.name,
    owner: vm.owner ?? null,
    price_per_hour: vmPrice(vm),
    resource: vmResource(vm),
  }
}

/** The GPU model as the workload reports it, if it does. */
export function vmGpuModel(vm: KnownVm): string | undefined {
  return vm.workload.resource?.gpu_model ?? vm.workload.resource?.gpu_type ?? undefined
}

/**
 * Finds the VMs a user named: by exact uid or name, else by the short label that `up --name` took within the
 * fleet (worker1 is tcli-<fleet>-worker1).
 */
export function findVm(vms: KnownVm[], target: string, fleet = DEFAULT_FLEET): KnownVm[] {
  const exact = vms.filter((vm) => vm.uid === target || vm.name === target)
  if (exact.length > 0) return exact
  const labelled = `${NAME_PREFIX}${fleet}-${target}`
  return vms.filter((vm) => vm.name === labelled)
}

/** The VMs a user means by a name: see meantByName (a live, deployed VM wins over a tombstone or a registered leftover). */
export function resolveVm(vms: KnownVm[], target: string, fleet = DEFAULT_FLEET): KnownVm[] {
  return meantByName(
    findVm(vms, target, fleet),
    (vm) => vm.status,
    (vm) => vm.gone,
  )
}

/**
 * The one VM a user named, under an owner scope (see findForOwner): NOT_FOUND (exit 4) when none matches,
 * NAME_CONFLICT when several do.
 */
export function findOneVm(vms: KnownVm[], target: string, fleet: string, scope: OwnerScope): KnownVm {
  const matches = findForOwner(vms, scope, target, (among) => resolveVm(among, target, fleet))
  if (matches.length === 0)
    throw new TargonError('NOT_FOUND', `no VM named or with uid ${target}`, {
      hint: notFoundHint(suggestVmName(target, vms, fleet, scope), `run ${whereToLook(scope)}`),
    })
  if (matches.length > 1)
    throw new TargonError('NAME_CONFLICT', `${matches.length} VMs are named ${target}`, {
      hint: `use a uid: ${matches.map((vm) => vm.uid).join(', ')}`,
    })
  return matches[0] as KnownVm
}

export function vmPrice(vm: KnownVm): number | null {
  return workloadPrice(vm.workload) ?? null
}

export function vmResource(vm: KnownVm): string | null {
  return workloadResourceName(vm.workload) ?? vm.record?.resource ?? null
}

/** What to say of listed items that failed the API checks. */
export function invalidWarning(invalid: {uid: string | null; problem: string}[]): string {
  const which = invalid.map((item) => (item.uid === null ? `(no uid: ${item.problem})` : `${JSON.stringify(item.uid)} (${item.problem})`))
  return `${invalid.length} listed workload(s) fail the checks of the API's answer and may bill: ${which.join(', ')}; nothing is done with them unless named by their exact uid (targon down <uid>)`
}
