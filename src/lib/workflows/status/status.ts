/**
 * `targon status` without the rendering: what the API lists, joined with local state
 * (fleet/fleet-read.ts), reduced to the selected VMs with their billing, estimated cost, TTL and
 * drift, plus the dstack fleet file when asked. Read-only: it never deletes anything.
 */
import {type DstackFleet, dstackFleet} from '../../adapters/bootstrap/dstack-fleet.js'
import type {Usage} from '../../domain/idle/schema.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {StatusResult, StatusVm} from './schema.js'
import {markerSaysBootstrapped, readMarker} from '../../adapters/bootstrap/marker.js'
import {probeUsages} from '../../domain/idle/idle.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {ageSeconds, budgetLeft, estimatedCost, roundUsd} from '../../domain/fleet/estimates.js'
import {
  type KnownVm,
  billingUncertain,
  findVm,
  invalidWarning,
  outsideOwner,
  readFleet,
  vmGpuModel,
  vmPrice,
  vmResource,
} from '../../domain/fleet/fleet-read.js'
import {type OwnerScope, type VmOwner, findForOwner, outsideWarning, scoped} from '../../domain/fleet/owners.js'
import {notFoundHint, suggestVmName} from '../../domain/fleet/suggest.js'
import {displayGpuModel, normalizeOffer} from '../../domain/offers/offers.js'
import {TargonError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import type {Clock} from '../../core/clock.js'
import {formatDuration} from '../../core/input.js'
import {guardCoverage} from '../guard/coverage.js'
import {dstackStates} from '../dstack/vm-states.js'
import {checkedPrivateKeyPath} from '../../adapters/ssh/project-key.js'
import type {RunContext} from '../run-context.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import {idleLimitOf, limitsOf, limitsProblem, readLimitsOnVms} from '../../domain/fleet/limits.js'
import {orgBilling} from './org-billing.js'
import {VmSessions} from '../../domain/fleet/vm-sessions.js'

/** What Targon's teardown has been seen to leave in an `error` tombstone's message (docs/concepts/deletion.md). */
const TEARDOWN_TEXT = /stopping container|exit code 137/i

export interface StatusOptions {
  org: string
  /** The VMs named on the command line (names, uids or --name labels of `configuredFleet`); empty for a fleet. */
  targets: string[]
  /** The fleet shown (--fleet), or null for every fleet. */
  fleet: string | null
  configuredFleet: string
  anyOrigin: boolean
  owners: OwnerScope
  showDeleted: boolean
  /** Also build the dstack fleet file for the fleet's bootstrapped, running VMs. */
  dstackFleet: boolean
  /** --usage: read each running VM's idle clock and a live sample over SSH. */
  usage: boolean
  /** The configured idle-limit, which the guard applies to VMs without their own: ENDS_BY shows it as the sweep does. */
  idleLimitS: number | null
}

/** The run's settings give the config directory and the profile (for the guard that covers them); warnings go to its warn. */
export async function runStatus(ctx: RunContext, client: TargonClient, state: LocalState, options: StatusOptions): Promise<StatusResult> {
  const {clock, warn} = ctx
  const configDir = ctx.settings.dir
  const profile = (await ctx.settings.profile()).name
  const view = await readFleet(client, options.org, state, {
    clock,
    historyBudget: ctx.historyBudget,
    // Always: the org's billing is split by owner, whatever the scope.
    readOwners: true,
  })
  recordFleetRead(state, options.org, view, clock)
  for (const problem of view.problems) warn(problem)
  const picked = shownVms(view.vms, options)
  // Named VMs were resolved under the scope already; the scope takes the rest from a fleet's listing. What it leaves
  // out is every billing VM of this tool outside the owner's, whatever the other selectors.
  const selected = options.targets.length > 0 ? picked : scoped(picked, options.owners).inScope
  const outside = options.targets.length > 0 ? {billing: new Map<VmOwner, number>(), unknown: 0} : outsideOwner(view.vms, options.owners)
  const outsideBilling = outside.billing
  const outsideNote = outsideWarning(outsideBilling, options.owners, outside.unknown)
  if (outsideNote) warn(outsideNote)
  const offers = selected.some((vm) => !vmGpuModel(vm)) ? await offersByResource(client, warn) : new Map<string, Offer>()
  // dstack's fleets are read once, meanwhile (never throws).
  const dstackRead = dstackStates(ctx, selected)
  // The limits each VM carries, where this directory can read them: the stricter of those and a record are shown.
  const sessions = new VmSessions({clock, configDir, connectMs: await ctx.sshConnectMs(), signal: ctx.signal})
  const markers = new Map<string, boolean>()
  // With --usage, each probe reads the VM's limits first, over its own connection.
  const usages = await (
    options.usage
      ? usageOf(selected, sessions, markers, clock, configDir)
      : readLimitsOnVms(selected, sessions, {configDir, signal: ctx.signal}).then(() => new Map<string, Usage>())
  ).finally(() => sessions.closeAll())
  const inDstack = await dstackRead
  const now = clock.now()
  const vms = selected.map((vm) => ({
    ...toStatusVm(vm, now, offers, usages.get(vm.uid) ?? null, markers.get(vm.uid) ?? null, options.idleLimitS),
    dstack_state: inDstack?.get(vm.uid) ?? null,
  }))
  const drift = [
    ...selected.filter((vm) => vm.owned && !vm.record).map((vm) => ({kind: 'server-only' as const, name: vm.name, uid: vm.uid})),
    ...view.localOnly
      .filter((record) => options.targets.length === 0 && (options.fleet === null || record.fleet === options.fleet))
      .map((record) => ({kind: 'local-only' as const, name: record.name, uid: record.uid})),
  ]
  for (const item of drift) {
    if (item.kind === 'local-only')
      warn(`${item.name} has a local record but no live VM; tidy up with targon down ${item.uid ?? item.name}`)
  }

  for (const vm of vms) warnAboutBilling(vm, options.owners, warn)
  const unknown = selected.filter(billingUncertain)
  // One line for all of them, however many: each is listed by --show-deleted (and in --json). Targon's teardown text
  // changes the wording only: it is no contract, and exit code 137 is also an out-of-memory kill.
  const teardown = unknown.filter((vm) => TEARDOWN_TEXT.test(vm.workload.state?.message ?? '')).length
  if (unknown.length > 0)
    warn(
      `${countOf(unknown.length, 'record')} of unknown billing (an error record: the remains of a deletion, or a crash that bills; the server's history could not tell${teardown > 0 ? `; ${teardown} probably deleted, by Targon's teardown message` : ''}): --show-deleted lists them, and targon down <uid> settles one of yours`,
    )
  // The tombstones the selection leaves out, to say how many.
  const deletedHidden =
    options.showDeleted || options.targets.length > 0
      ? 0
      : scoped(shownVms(view.vms, {...options, showDeleted: true}), options.owners).inScope.filter((vm) => vm.gone).length
  // Whatever the selection: nothing can tell which fleet or owner such an item has, and it may bill.
  const invalid = view.invalid.map((item) => ({billing: null, problem: item.problem, uid: item.uid}))
  if (invalid.length > 0) warn(invalidWarning(invalid))
  const dstack = options.dstackFleet ? dstackFleetOf(options.fleet ?? options.configuredFleet, vms, state.dir, warn) : null
  const totals = totalsOf(vms, deletedHidden)
  totals.unknown_billing_count += invalid.length
  return {
    drift,
    dstack_fleet: dstack,
    fleet: options.fleet,
    guard: guardCoverage(configDir, profile, warn),
    invalid_answers: invalid,
    org: options.org,
    outside_owner: [...outsideBilling].map(([owner, count]) => ({
      billing_count: count,
      owner: owner ?? null,
      owner_known: owner !== undefined,
    })),
    org_billing: orgBilling(view.vms, view.invalid.length),
    owner: options.owners.anyOwner ? null : options.owners.owner,
    totals,
    vms,
  }
}

/** Tombstones only with --show-deleted; this tool's VMs unless --any-origin; the fleet, or the named VMs. */
function shownVms(all: KnownVm[], options: StatusOptions): KnownVm[] {
  const shown = all.filter((vm) => options.showDeleted || !vm.gone)
  // A VM of this tool whose fleet cannot be told (its name was refused, and no local record says) shows in every fleet.
  if (options.targets.length === 0)
    return shown.filter(
      (vm) => (options.anyOrigin || vm.owned) && (options.fleet === null || vm.fleet === options.fleet || (vm.owned && vm.fleet === null)),
    )
  return options.targets.flatMap((target) => {
    const found = findForOwner(shown, options.owners, target, (among) => findVm(among, target, options.configuredFleet))
    if (found.length === 0)
      throw new TargonError('NOT_FOUND', `no VM named or with uid ${target}`, {
        hint: notFoundHint(
          suggestVmName(target, all, options.configuredFleet, options.owners),
          'run targon status --all-fleets to see them',
        ),
      })
    return found
  })
}

/** A known crash or suspension bills: said per VM, with the way out only to whom it belongs. */
function warnAboutBilling(vm: StatusVm, scope: OwnerScope, warn: (message: string) => void): void {
  if (vm.billing !== true || (vm.status !== 'suspended' && vm.status !== 'error')) return
  const which = vm.name ?? vm.uid
  const yours = vm.owner === null ? vm.owner_known : vm.owner === scope.owner
  const way = yours
    ? `delete it with targon down ${vm.uid}`
    : vm.owner === null
      ? 'its owner could not be read'
      : `it is ${vm.owner}'s to delete`
  warn(`${which} is ${vm.status === 'error' ? 'crashed' : 'suspended'} and still bills; ${way}`)
}

/** The inventory's offers by resource name: GPUs for workloads whose listing names only their resource. */
async function offersByResource(client: TargonClient, warn: (message: string) => void): Promise<Map<string, Offer>> {
  try {
    return new Map((await client.inventory()).offers.map((raw) => [raw.name, normalizeOffer(raw)]))
  } catch (error) {
    warn(`GPU models unknown: the inventory could not be read (${(error as Error).message})`)
    return new Map()
  }
}

function dstackFleetOf(fleet: string, vms: StatusVm[], configDir: string, warn: (message: string) => void): DstackFleet {
  // dstack would reject a key that others can read, later and less clearly.
  const identityFile = checkedPrivateKeyPath(configDir)
  const ready = vms.flatMap((vm) =>
    vm.bootstrapped && vm.status === 'running' && vm.public_ip && vm.ssh_port
      ? [{hostname: vm.public_ip, name: vm.name, port: vm.ssh_port, uid: vm.uid}]
      : [],
  )
  const skipped = vms.length - ready.length
  if (skipped > 0)
    warn(
      `${countOf(skipped, 'VM')} of fleet ${fleet} ${skipped === 1 ? 'is' : 'are'} not bootstrapped and running; left out of the dstack fleet (run targon up --name <vm>)`,
    )
  // A fleet file without hosts would only fail later, in dstack apply.
  if (ready.length === 0) {
    throw new TargonError('NOT_FOUND', `no VM of fleet ${fleet} is bootstrapped and running: there is no dstack fleet to print`, {
      hint: `rent one with targon up <resource> --fleet ${fleet}, or finish one with targon up --name <vm> --fleet ${fleet}`,
    })
  }

  const fleetFile = dstackFleet(fleet, identityFile, ready)
  for (const ip of fleetFile.shared_ips) {
    warn(
      `several VMs share the IP ${ip}: dstack refuses a hostname already used by another fleet, whatever the port; keep them in one fleet, or give each its own DNS name`,
    )
  }

  return fleetFile
}

/**
 * --usage: each running VM's idle clock and a live sample, read over SSH (as many at once as deletions); a VM that
 * cannot be read says why.
 */
async function usageOf(
  vms: KnownVm[],
  sessions: VmSessions,
  markers: Map<string, boolean>,
  clock: Clock,
  configDir: string,
): Promise<Map<string, Usage>> {
  const running = vms.filter((vm) => vm.status === 'running' && !vm.gone)
  // A VM without a local record (rented elsewhere) says itself whether it is bootstrapped, over the connection made anyway.
  const alsoRead = async (vm: KnownVm, session: SshSession) => {
    if (!vm.record) markers.set(vm.uid, markerSaysBootstrapped(await readMarker(session)))
  }
  return probeUsages(running, sessions, {alsoRead, clock, configDir, limitS: null, parallel: MAX_MUTATIONS_IN_FLIGHT})
}

/**
 * One VM as status shows it. Bootstrapped: the local record's word; for a VM without one, its marker when --usage
 * read it (`marker`), else null (not known).
 */
function toStatusVm(
  vm: KnownVm,
  now: number,
  offers: Map<string, Offer>,
  usage: Usage | null,
  marker: boolean | null,
  idleLimitS: number | null,
): Omit<StatusVm, 'dstack_state'> {
  const {workload, record} = vm
  const resource = vmResource(vm)
  const offer = resource === null ? undefined : offers.get(resource)
  const price = vmPrice(vm)
  const gpuModel = vmGpuModel(vm) ?? offer?.gpu_model
  const limits = limitsOf(vm)
  const expires = limits.ttl_expires_at ? Date.parse(limits.ttl_expires_at) : Number.NaN
  return {
    age_seconds: ageSeconds(vm, now),
    billing: vm.billing,
    billing_assumed: vm.billingAssumed,
    bootstrapped: record ? record.bootstrapped : marker,
    created_at: workload.created_at ?? null,
    deleted: vm.gone,
    history: vm.history ?? null,
    budget_left_usd: budgetLeft(vm, now),
    idle_reason: usage?.idle_reason ?? null,
    idle_seconds: usage?.idle_seconds ?? null,
    usage,
    estimated_cost_usd: estimatedCost(vm, now),
    fleet: vm.fleet,
    gpu_count: workload.resource?.gpu_count ?? offer?.gpu_count ?? null,
    gpu_model: gpuModel ? displayGpuModel(gpuModel) : null,
    local_record: record ? 'present' : 'missing',
    max_cost_usd: limits.max_cost_usd,
    limits_source: vm.owned ? limits.source : null,
    vm_limits: vm.onVm === undefined ? 'not-read' : vm.onVm.state,
    vm_limits_problem: limitsProblem(vm.onVm),
    name: vm.name,
    origin: vm.owned ? 'this-tool' : 'other',
    owner: vm.owner ?? null,
    owner_known: vm.owner !== undefined,
    price_per_hour: price,
    frozen_price_per_hour: workload.frozen_cost_per_hour ?? null,
    public_ip: workload.state?.public_ip ?? null,
    resource,
    ssh_port: workload.state?.ssh_port ?? null,
    status: vm.status,
    ttl_expires_at: limits.ttl_expires_at,
    ttl_left_seconds: Number.isNaN(expires) ? null : Math.round((expires - now) / 1000),
    uid: vm.uid,
    ends_by: endsBy(vm, now, usage, idleLimitS),
  }
}

/**
 * What ends a VM and when, in a few words: its TTL, its idle limit (as the VM reports it, else the one the guard
 * applies), its budget; "no limit" when none applies.
 */
function endsBy(vm: KnownVm, now: number, usage: Usage | null, idleLimitS: number | null): string {
  const limits = limitsOf(vm)
  // Neither a record here nor a file read from the VM: what ends it is not known, which is not "no limit".
  if (vm.owned && limits.source === null) return 'limits unknown'
  const ends: string[] = []
  if (limits.ttl_expires_at) ends.push(`TTL ${limits.ttl_expires_at.slice(11, 16)}Z`)
  const idleLimit = usage?.idle_limit_seconds ?? idleLimitOf(vm, idleLimitS)
  if (idleLimit !== null)
    ends.push(`idle ${usage?.idle_seconds == null ? '?' : formatDuration(usage.idle_seconds * 1000)}/${formatDuration(idleLimit * 1000)}`)
  if (limits.max_cost_usd !== null) ends.push(`cost ${(estimatedCost(vm, now) ?? 0).toFixed(2)}/${limits.max_cost_usd.toFixed(2)}`)
  return ends.length === 0 ? 'no limit' : ends.join(', ')
}

/**
 * Only what is known to bill counts: tombstones and registered leftovers do not, and records of unknown billing (an
 * error record made here included) are counted apart.
 */
function totalsOf(vms: StatusVm[], deletedHidden: number): StatusResult['totals'] {
  const billing = vms.filter((vm) => vm.billing === true)
  return {
    deleted_hidden_count: deletedHidden,
    billing_count: billing.length,
    count: vms.length,
    estimated_cost_usd: roundUsd(billing.reduce((sum, vm) => sum + (vm.estimated_cost_usd ?? 0), 0)),
    price_per_hour: roundUsd(billing.reduce((sum, vm) => sum + (vm.price_per_hour ?? 0), 0)),
    unknown_billing_count: vms.filter((vm) => vm.billing === null).length,
  }
}
