/**
 * `targon extend` without the rendering: postpones the limits of named VMs where they are kept (the API has no field
 * for them): in this config directory's records and in the file each VM carries, or, for a VM without a record here
 * (from a team guard's directory), in that file alone. A TTL moves to (the later of now and its deadline) + the
 * duration, so an extension never shortens one and a lapsed TTL gets the full duration from now; an idle deletion is
 * held off for the duration; --max-cost raises the budget.
 */
import type {VmReach} from '../../domain/fleet/fan-out.js'
import type {ListingRun} from '../../domain/fleet/run.js'
import type {ExtendResult} from './schema.js'
import {TargonError, asTargonError} from '../../core/errors.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import {type KnownVm, findOneVm, readFleet, vmPrice} from '../../domain/fleet/fleet-read.js'
import {createdAt} from '../../domain/fleet/estimates.js'
import type {LocalState, VmRecord} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {mapBounded} from '../../core/concurrency.js'
import {holdIdleOnVm} from '../../domain/idle/idle.js'
import {type Limits, carryLimits, limitsFile, limitsOf, readLimitsOnVms, recordLimits, whyLimitsUnknown} from '../../domain/fleet/limits.js'
import {VmSessions} from '../../domain/fleet/vm-sessions.js'
import type {VmLimits} from '../../adapters/bootstrap/vm-limits.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'

/** The config directory's project key and pins write the idle hold-off on each VM. */
export interface ExtendOptions extends VmReach {
  org: string
  targets: string[]
  byMs: number | null
  /** What --by moves: the TTL, the idle deletion, or both. */
  ttl: boolean
  idle: boolean
  maxCostUsd: number | null
  owners: OwnerScope
  labelFleet: string
}

export async function runExtend(run: ListingRun, client: TargonClient, state: LocalState, options: ExtendOptions): Promise<ExtendResult> {
  const {clock} = run
  // Owners are read in full when the listing leaves them out: an owner not known is refused, never taken for none.
  const view = await readFleet(client, options.org, state, {clock, historyBudget: run.historyBudget, readOwners: true})
  for (const problem of view.problems) run.warn(problem)
  recordFleetRead(state, options.org, view, clock)
  const live = view.vms.filter((vm) => !vm.gone)
  const named = options.targets.map((target) => checkOwner(findOneVm(live, target, options.labelFleet, options.owners), options.owners))
  // One connection per VM: the limits a VM without a record here carries are read, and the new ones written, over it.
  const sessions = new VmSessions({clock, configDir: options.configDir, connectMs: options.connectMs})
  try {
    await readLimitsOnVms(
      named.filter((vm) => !vm.record),
      sessions,
      {configDir: options.configDir},
    )
    // Every name is checked before any limit changes: one refusal leaves all as they were.
    const chosen = named.map((vm) => {
      const target = targetOf(vm)
      checkRaise(target, options.maxCostUsd)
      return target
    })
    checkTtls(chosen, options, run.warn)
    const now = clock.now()
    const moved = chosen.map((target) => ({...target, limits: {...target.limits, ...extended(target.limits, options, now)}}))
    const records = moved.map((target) =>
      target.record ? (state.updateVm(options.org, target.record.name, recordChange(target.limits)) ?? null) : null,
    )
    // The limits travel with the VM, and a guard goes by the stricter of its file and a record: the VM's file gets the
    // new limits, and the idle hold-off goes into its sampler's config, so that its own judgement says so.
    const holdS = options.byMs !== null && options.idle ? options.byMs / 1000 : null
    const onVm = await mapBounded(moved, MAX_MUTATIONS_IN_FLIGHT, async (target, index) => {
      const file = fileOf(target, records[index] ?? null, now)
      // A VM never bootstrapped has no idle sampler and carries no limits.
      if (file === null) return {hold: null, limits: null}
      const written = await onTheVm(target.vm, sessions, file, holdS)
      const which = target.vm.name ?? target.vm.uid
      if (written.hold === 'not-written')
        run.warn(
          `${which}: the idle hold-off could not be written on the VM (${written.problem}); ${target.record ? 'it is kept here, and the sweeps and down --idle of this directory honour it' : 'nothing here keeps it'}`,
        )
      if (written.limits === 'not-written')
        run.warn(
          `${which}: its new limits could not be written on the VM (${written.problem}): a guard elsewhere still goes by the ones it carries, and any sweep that reads them by the stricter of those and this directory's; run targon extend again once it can be reached`,
        )
      return written
    })
    return {
      org: options.org,
      vms: moved.map((target, index) => ({
        ...resultOf(target.vm, target.limits),
        idle_hold_on_vm: onVm[index]?.hold ?? null,
        limits_on_vm: onVm[index]?.limits ?? null,
      })),
    }
  } finally {
    await sessions.closeAll()
  }
}

/** A VM to extend, and the limits that move: its record's, or, without a record here, the ones it carries. */
interface Target {
  vm: KnownVm
  record: VmRecord | null
  limits: Limits
  /** The file it carries, for a VM without a record here (the new one keeps its other fields). */
  carried: VmLimits | null
}

type Written = 'not-written' | 'written'

/** Over the VM's connection: the idle hold-off (when asked) and its limits file; what failed, and why. */
async function onTheVm(
  vm: KnownVm,
  sessions: VmSessions,
  file: VmLimits,
  holdS: number | null,
): Promise<{hold: Written | null; limits: Written | null; problem?: string}> {
  const failed = (problem: string) => ({hold: holdS === null ? null : ('not-written' as const), limits: 'not-written' as const, problem})
  if (vm.status !== 'running') return failed(`not running (${vm.status})`)
  try {
    const session = await sessions.session(vm)
    const holdProblem = holdS === null ? null : await holdIdleOnVm(session, holdS)
    const limitsProblem = await carryLimits(session, file)
    return {
      hold: holdS === null ? null : holdProblem === null ? 'written' : 'not-written',
      limits: limitsProblem === null ? 'written' : 'not-written',
      problem: holdProblem ?? limitsProblem ?? undefined,
    }
  } catch (error) {
    return failed(asTargonError(error).message)
  }
}

/** The file the VM is to carry after the extension; null for a VM that carries none (never bootstrapped). */
function fileOf(target: Target, record: VmRecord | null, now: number): VmLimits | null {
  if (record) return record.bootstrapped ? limitsFile(record, target.vm.owner ?? null, now) : null
  if (!target.carried) return null
  const {idle_hold_until, max_cost_usd, ttl_expires_at} = target.limits
  return {...target.carried, idle_hold_until, max_cost_usd, ttl_expires_at, written_at: new Date(now).toISOString()}
}

/** Another owner's VM, or one whose owner could not be read, is refused (exit 2) unless --any-owner. */
function checkOwner(vm: KnownVm, owners: OwnerScope): KnownVm {
  if (!owners.anyOwner && vm.owner === undefined)
    throw new TargonError('USAGE', `the owner of ${vm.name ?? vm.uid} could not be read`, {
      hint: 'try again, or pass --any-owner to extend it all the same',
    })
  if (!owners.anyOwner && vm.owner !== null && vm.owner !== undefined && vm.owner !== owners.owner)
    throw new TargonError('USAGE', `${vm.name ?? vm.uid} belongs to owner ${vm.owner}`, {
      hint: 'ask its owner, or pass --any-owner to extend it all the same',
    })
  return vm
}

/** What moves: the record's limits, else those the VM carries; a VM with neither has no limit to move (exit 2). */
function targetOf(vm: KnownVm): Target {
  if (vm.record) return {carried: null, limits: recordLimits(vm.record), record: vm.record, vm}
  if (vm.onVm?.state === 'read' && limitsOf(vm).source === 'vm') return {carried: vm.onVm.limits, limits: limitsOf(vm), record: null, vm}
  throw new TargonError(
    'USAGE',
    `${vm.name ?? vm.uid} has no limits kept in this config directory${vm.onVm ? `, and the ones it carries cannot be gone by: ${whyLimitsUnknown(vm)}` : ''}`,
    {hint: "run targon extend from the config directory that ran its targon up, or from the team guard's"},
  )
}

/** --max-cost raises a budget: a lower one would bring its deletion closer, which is not postponing it. */
function checkRaise(target: Target, maxCostUsd: number | null): void {
  const budget = target.limits.max_cost_usd
  if (maxCostUsd !== null && budget !== null && maxCostUsd < budget)
    throw new TargonError('USAGE', `--max-cost ${maxCostUsd} is below the budget of ${target.vm.name ?? target.vm.uid} (${budget} USD)`, {
      hint: `pass at least ${budget}; extend only raises a budget`,
    })
}

/**
 * --ttl-only moves TTLs alone: a VM without one is warned about, and when no VM has one (and no budget is set) nothing
 * would change, which is refused (exit 2) before any limit is touched.
 */
function checkTtls(chosen: Target[], options: ExtendOptions, warn: (message: string) => void): void {
  if (options.byMs === null || options.idle) return
  const without = chosen.filter((target) => target.limits.ttl_expires_at === null).map((target) => target.vm)
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

/** The limits an extension moves: a TTL from the later of now and its deadline, a hold-off, a budget raised. */
function extended(limits: Limits, options: ExtendOptions, now: number): Partial<Limits> {
  const change: Partial<Limits> = {}
  if (options.byMs !== null && options.ttl && limits.ttl_expires_at !== null)
    change.ttl_expires_at = new Date(Math.max(now, Date.parse(limits.ttl_expires_at)) + options.byMs).toISOString()
  // A hold already further out stays: an extension never brings the idle deletion closer.
  if (options.byMs !== null && options.idle)
    change.idle_hold_until = new Date(Math.max(now + options.byMs, Date.parse(limits.idle_hold_until ?? '') || 0)).toISOString()
  if (options.maxCostUsd !== null) change.max_cost_usd = options.maxCostUsd
  return change
}

/** What a record keeps of moved limits. */
function recordChange(limits: Limits): Partial<VmRecord> {
  return {idle_hold_until: limits.idle_hold_until, max_cost_usd: limits.max_cost_usd, ttl_expires_at: limits.ttl_expires_at}
}

function resultOf(vm: KnownVm, limits: Limits): Omit<ExtendResult['vms'][number], 'idle_hold_on_vm' | 'limits_on_vm'> {
  const price = vmPrice(vm)
  const created = createdAt(vm)
  const budget = limits.max_cost_usd
  return {
    budget_ends_at:
      budget === null || price === null || price <= 0 || created === null
        ? null
        : new Date(created + (budget / price) * 3_600_000).toISOString(),
    idle_hold_until: limits.idle_hold_until,
    max_cost_usd: budget,
    name: vm.name,
    ttl_expires_at: limits.ttl_expires_at,
    uid: vm.uid,
  }
}
