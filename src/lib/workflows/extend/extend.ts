/**
 * `targon extend` without the rendering: postpones the limits of named VMs where they are kept, in this config
 * directory's records (the API has no field for them). A TTL moves to (the later of now and its deadline) + the
 * duration, so an extension never shortens one and a lapsed TTL gets the full duration from now; an idle deletion is
 * held off for the duration; --max-cost raises the budget.
 */
import type {ListingRun} from '../../domain/fleet/run.js'
import type {ExtendResult} from './schema.js'
import {TargonError, asTargonError} from '../../core/errors.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import {type KnownVm, findOneVm, snapshot, vmPrice} from '../../domain/fleet/workloads.js'
import {createdAt} from '../../domain/fleet/estimates.js'
import type {LocalState, VmRecord} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {mapBounded} from '../../core/concurrency.js'
import {holdIdleOnVm} from '../../domain/idle/idle.js'
import {openVm} from '../../domain/fleet/fan-out.js'
import {carryLimits, limitsFile} from '../../domain/fleet/limits.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {recordSnapshot} from '../../domain/ledger/ledger.js'

export interface ExtendOptions {
  org: string
  targets: string[]
  byMs: number | null
  /** What --by moves: the TTL, the idle deletion, or both. */
  ttl: boolean
  idle: boolean
  maxCostUsd: number | null
  owners: OwnerScope
  labelFleet: string
  /** Where the project key and the pins are, to write the idle hold-off on each VM. */
  configDir: string
}

export async function runExtend(run: ListingRun, client: TargonClient, state: LocalState, options: ExtendOptions): Promise<ExtendResult> {
  const {clock} = run
  const now = clock.now()
  // Owners are read in full when the listing leaves them out: an owner not known is refused, never taken for none.
  const view = await snapshot(client, options.org, state, {clock, historyBudget: run.historyBudget, readOwners: true})
  for (const problem of view.problems) run.warn(problem)
  recordSnapshot(state, options.org, view, clock)
  const live = view.vms.filter((vm) => !vm.gone)
  // Every name is checked before any record changes: one refusal leaves all as they were.
  const chosen = options.targets.map((target) => {
    const vm = checkOwn(findOneVm(live, target, options.labelFleet, options.owners), options.owners)
    checkRaise(vm, options.maxCostUsd)
    return vm
  })
  checkTtls(chosen, options, run.warn)
  const records = chosen.map((vm) => state.updateVm(options.org, vm.record.name, extended(vm.record, options, now)) ?? vm.record)
  // The limits travel with the VM, and a guard goes by the stricter of its file and a record: the VM's file gets the
  // new limits, and the idle hold-off goes into its sampler's config, so that its own judgement says so.
  const holdS = options.byMs !== null && options.idle ? options.byMs / 1000 : null
  const onVm = await mapBounded(chosen, MAX_MUTATIONS_IN_FLIGHT, async (vm, index) => {
    // A VM never bootstrapped has no idle sampler and carries no limits.
    if (!vm.record.bootstrapped) return {hold: null, limits: null}
    const written = await onTheVm(vm, records[index] as VmRecord, holdS, options, run.clock.now())
    if (written.hold === 'not-written')
      run.warn(
        `${vm.name ?? vm.uid}: the idle hold-off could not be written on the VM (${written.problem}); it is kept here, and the sweeps and down --idle of this directory honour it`,
      )
    if (written.limits === 'not-written')
      run.warn(
        `${vm.name ?? vm.uid}: its new limits could not be written on the VM (${written.problem}): a guard elsewhere still goes by the ones it carries, and any sweep that reads them by the stricter of those and this directory's; run targon extend again once it can be reached`,
      )
    return written
  })
  return {
    org: options.org,
    vms: chosen.map((vm, index) => ({
      ...resultOf(vm, records[index] as VmRecord),
      idle_hold_on_vm: onVm[index]?.hold ?? null,
      limits_on_vm: onVm[index]?.limits ?? null,
    })),
  }
}

type Written = 'not-written' | 'written'

/** Over one connection: the idle hold-off (when asked) and the VM's limits file; what failed, and why. */
async function onTheVm(
  vm: KnownVm,
  record: VmRecord,
  holdS: number | null,
  options: ExtendOptions,
  now: number,
): Promise<{hold: Written | null; limits: Written | null; problem?: string}> {
  const failed = (problem: string) => ({hold: holdS === null ? null : ('not-written' as const), limits: 'not-written' as const, problem})
  if (vm.status !== 'running') return failed(`not running (${vm.status})`)
  let session: SshSession | undefined
  try {
    session = (await openVm(vm, {configDir: options.configDir})).session
    const holdProblem = holdS === null ? null : await holdIdleOnVm(session, holdS)
    const limitsProblem = await carryLimits(session, limitsFile(record, vm.owner ?? null, now))
    return {
      hold: holdS === null ? null : holdProblem === null ? 'written' : 'not-written',
      limits: limitsProblem === null ? 'written' : 'not-written',
      problem: holdProblem ?? limitsProblem ?? undefined,
    }
  } catch (error) {
    return failed(asTargonError(error).message)
  } finally {
    session?.close()
  }
}

/**
 * Another owner's VM, or one whose owner could not be read, is refused (exit 2) unless --any-owner; a VM without a
 * record here has no limit to move.
 */
function checkOwn(vm: KnownVm, owners: OwnerScope): KnownVm & {record: VmRecord} {
  if (!owners.anyOwner && vm.owner === undefined)
    throw new TargonError('USAGE', `the owner of ${vm.name ?? vm.uid} could not be read`, {
      hint: 'try again, or pass --any-owner to extend it all the same',
    })
  if (!owners.anyOwner && vm.owner !== null && vm.owner !== undefined && vm.owner !== owners.owner)
    throw new TargonError('USAGE', `${vm.name ?? vm.uid} belongs to owner ${vm.owner}`, {
      hint: 'ask its owner, or pass --any-owner to extend it all the same',
    })
  if (!vm.record)
    throw new TargonError('USAGE', `${vm.name ?? vm.uid} has no limits kept in this config directory`, {
      hint: 'run targon extend from the config directory that ran its targon up',
    })
  return vm as KnownVm & {record: VmRecord}
}

/** --max-cost raises a budget: a lower one would bring its deletion closer, which is not postponing it. */
function checkRaise(vm: KnownVm & {record: VmRecord}, maxCostUsd: number | null): void {
  const budget = vm.record.max_cost_usd
  if (maxCostUsd !== null && budget !== null && maxCostUsd < budget)
    throw new TargonError('USAGE', `--max-cost ${maxCostUsd} is below the budget of ${vm.name ?? vm.uid} (${budget} USD)`, {
      hint: `pass at least ${budget}; extend only raises a budget`,
    })
}

/**
 * --ttl-only moves TTLs alone: a VM without one is warned about, and when no VM has one (and no budget is set) nothing
 * would change, which is refused (exit 2) before any record is touched.
 */
function checkTtls(chosen: (KnownVm & {record: VmRecord})[], options: ExtendOptions, warn: (message: string) => void): void {
  if (options.byMs === null || options.idle) return
  const without = chosen.filter((vm) => vm.record.ttl_expires_at === null)
  if (without.length === chosen.length && options.maxCostUsd === null)
    throw new TargonError(
      'USAGE',
      without.length === 1 ? `${names(without)} has no TTL to move` : `none of ${names(without)} has a TTL to move`,
      {
        hint: 'drop --ttl-only to hold off the idle deletion, or set a TTL with targon up --name NAME --ttl DURATION',
      },
    )
  for (const vm of without) warn(`${vm.name ?? vm.uid} has no TTL: --ttl-only leaves it as it was`)
}

function names(vms: KnownVm[]): string {
  return vms.map((vm) => vm.name ?? vm.uid).join(', ')
}

function extended(record: VmRecord, options: ExtendOptions, now: number): Partial<VmRecord> {
  const change: Partial<VmRecord> = {}
  if (options.byMs !== null && options.ttl && record.ttl_expires_at !== null)
    change.ttl_expires_at = new Date(Math.max(now, Date.parse(record.ttl_expires_at)) + options.byMs).toISOString()
  // A hold already further out stays: an extension never brings the idle deletion closer.
  if (options.byMs !== null && options.idle)
    change.idle_hold_until = new Date(Math.max(now + options.byMs, Date.parse(record.idle_hold_until ?? '') || 0)).toISOString()
  if (options.maxCostUsd !== null) change.max_cost_usd = options.maxCostUsd
  return change
}

function resultOf(vm: KnownVm, record: VmRecord): Omit<ExtendResult['vms'][number], 'idle_hold_on_vm' | 'limits_on_vm'> {
  const price = vmPrice(vm)
  const created = createdAt(vm)
  const budget = record.max_cost_usd
  return {
    budget_ends_at:
      budget === null || price === null || price <= 0 || created === null
        ? null
        : new Date(created + (budget / price) * 3_600_000).toISOString(),
    idle_hold_until: record.idle_hold_until,
    max_cost_usd: budget,
    name: vm.name,
    ttl_expires_at: record.ttl_expires_at,
    uid: vm.uid,
  }
}
