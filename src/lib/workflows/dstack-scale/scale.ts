/**
 * `targon dstack scale`: gives dstack what a backend would. When runs of the project wait for capacity that fleet
 * targon-F could give and it has no idle host, VMs are rented as `up` rents them (the price cap, the bootstrap and
 * shim, the clean-up on failure or interrupt, the limits written on each VM), then synced into the dstack fleet.
 * When no run waits, the hosts that dstack leaves idle and whose own idle clock says idle past their limit are
 * deleted as `down --idle` deletes them: out of dstack first.
 */
import type {VmReach} from '../../domain/fleet/fan-out.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {asTargonError} from '../../core/errors.js'
import {type OwnerScope, scoped} from '../../domain/fleet/owners.js'
import {type KnownVm, readFleet} from '../../domain/fleet/fleet-read.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import {type DownOptions, runDown} from '../down/down.js'
import {selectionOf} from '../down/selection.js'
import {type RentRequest, rentAsk, rentWithUp} from '../job/rent.js'
import {planUp} from '../up/plan.js'
import type {UpPlan} from '../up/schema.js'
import type {RunContext} from '../run-context.js'
import {dstackFleetName, heldHosts} from '../dstack/hosts.js'
import type {DstackHandle} from '../dstack/open.js'
import {type HostState, decideRent, hostState, waitingRuns} from './plan.js'
import type {DstackScaleResult} from './schema.js'
import {runDstackSync} from '../dstack/sync.js'

export interface DstackScaleOptions extends VmReach {
  org: string
  fleet: string
  owners: OwnerScope
  /** The offer (resource) to rent, and its price cap in USD/h. */
  resource: string
  maxPrice: number
  /** The most VMs fleet F may have. */
  max: number
  idleMs: number
  ttlMs: number
  maxCostUsd: number | null
  dryRun: boolean
  reconcileMs: number
  /** What the deletions' progress listens to. */
  onEvent?: DownOptions['onEvent']
}

type ScaleRun = RunContext & {info: (line: string) => void}

export async function runDstackScale(
  run: ScaleRun,
  client: TargonClient,
  state: LocalState,
  dstack: DstackHandle,
  options: DstackScaleOptions,
): Promise<DstackScaleResult> {
  const dstackFleet = dstackFleetName(options.fleet)
  const view = await readFleet(client, options.org, state, {clock: run.clock, historyBudget: run.historyBudget, readOwners: true})
  recordFleetRead(state, options.org, view, run.clock)
  const vms = fleetVms(view.vms, options)
  const [fleets, runs] = await Promise.all([dstack.client.listFleets(), dstack.client.listActiveRuns()])
  const held = heldHosts(
    fleets.filter((fleet) => fleet.name === dstackFleet),
    vms,
    dstack.settings.hostPattern,
  )
  const states = new Map<string, HostState>(
    vms.map((vm) => [vm.uid, hostState(held.filter((each) => each.vm.uid === vm.uid).map((each) => each.instance))]),
  )
  const waiting = waitingRuns(runs, dstackFleet, run.clock.now())
  const decision = decideRent(waiting.length, [...states.values()], options.max, options.fleet)
  const count = (wanted: HostState) => [...states.values()].filter((each) => each === wanted).length
  const result: DstackScaleResult = {
    dry_run: options.dryRun,
    dstack_fleet: dstackFleet,
    fleet: options.fleet,
    hosts: {busy: count('busy'), coming: count('coming'), idle: count('idle')},
    kept: [],
    limits: {
      idle_limit_seconds: options.idleMs / 1000,
      max_cost_usd: options.maxCostUsd,
      ttl_seconds: options.ttlMs / 1000,
    },
    nothing_done: null,
    org: options.org,
    plan: null,
    project: dstack.settings.project,
    removed: [],
    rent: decision.rent,
    rented: [],
    synced: null,
    waiting_runs: waiting,
  }

  // A host idle in dstack is capacity for a waiting run: only when none waits does an idle one go.
  const idleInDstack = waiting.length === 0 ? vms.filter((vm) => states.get(vm.uid) === 'idle') : []
  if (idleInDstack.length > 0) Object.assign(result, await removeIdle(run, client, state, dstack, options, idleInDstack))
  if (decision.rent > 0) {
    run.info(
      `${waiting.length} dstack run(s) wait for capacity: ${options.dryRun ? 'would rent' : 'renting'} ${decision.rent} VM(s) of ${options.resource} into fleet ${options.fleet}`,
    )
    if (options.dryRun) result.plan = await planRent(run, client, options, decision.rent)
    else Object.assign(result, await rentAndSync(run, client, state, dstack, options, decision.rent))
  }

  // Hosts kept for their idle clock are in data.kept; nothing was done all the same.
  if (decision.reason !== null && result.removed.length === 0)
    result.nothing_done = {message: decision.why ?? decision.reason, reason: decision.reason}
  return result
}

/** The VMs of fleet F that this tool made, in the owner's scope, that may bill. */
function fleetVms(vms: KnownVm[], options: Pick<DstackScaleOptions, 'fleet' | 'owners'>): KnownVm[] {
  return scoped(
    vms.filter((vm) => vm.owned && !vm.gone && vm.fleet === options.fleet && vm.billing !== false),
    options.owners,
  ).inScope
}

/** down --idle of these VMs, each by its idle clock (its own limit, else --idle): each leaves dstack, then is deleted. */
async function removeIdle(
  run: ScaleRun,
  client: TargonClient,
  state: LocalState,
  dstack: DstackHandle,
  options: DstackScaleOptions,
  vms: KnownVm[],
): Promise<Pick<DstackScaleResult, 'kept' | 'removed'>> {
  const down = await runDown(run, client, client.withSignal(undefined), options.org, state, {
    configDir: options.configDir,
    // Unattended, like the guard's sweep: the idle limit is the consent.
    confirm: async () => true,
    dryRun: options.dryRun,
    dstack: options.dryRun ? undefined : {force: false, handle: dstack},
    hooks: true,
    ignoreMissing: true,
    keepUnlistedRecords: true,
    labelFleet: options.fleet,
    onEvent: options.onEvent,
    parallel: 4,
    reasonOf: () => 'idle',
    reconcileMs: options.reconcileMs,
    connectMs: options.connectMs,
    selection: selectionOf(options.owners, {
      fleet: options.fleet,
      idle: true,
      idle_limit_seconds: options.idleMs / 1000,
      targets: vms.map((vm) => vm.uid),
    }),
    wakeRegistered: false,
  })
  return {kept: down.kept, removed: down.results}
}

/** What up would rent, and to whom (the rent's request, as rentAndSync sends it). */
function rentRequest(run: ScaleRun, options: DstackScaleOptions, count: number): RentRequest {
  return {
    configDir: options.configDir,
    count,
    fleet: options.fleet,
    idleMs: options.idleMs,
    maxCostUsd: options.maxCostUsd ?? undefined,
    maxPrice: options.maxPrice,
    owner: options.owners.owner,
    reconcileMs: options.reconcileMs,
    resource: options.resource,
    run,
    signal: run.signal,
    ttlMs: options.ttlMs,
  }
}

/** --dry-run: up --dry-run's plan of the rent, from the same inventory and rules (above the cap: refused as a rent is). */
async function planRent(run: ScaleRun, client: TargonClient, options: DstackScaleOptions, count: number): Promise<UpPlan> {
  const request = rentRequest(run, options, count)
  return planUp(run, client, await rentAsk(request))
}

/** Rents `count` VMs as up does, then syncs the dstack fleet; a sync that fails is a warning (the next one adds them). */
async function rentAndSync(
  run: ScaleRun,
  client: TargonClient,
  state: LocalState,
  dstack: DstackHandle,
  options: DstackScaleOptions,
  count: number,
): Promise<Pick<DstackScaleResult, 'rented' | 'synced'>> {
  const up = await rentWithUp(client, rentRequest(run, options, count))
  for (const failure of up.failed) run.warn(`${failure.name ?? 'a VM'} failed: ${failure.error.message}`)
  const rented = up.vms.map((vm) => ({name: vm.name, price_per_hour: vm.price_per_hour, resource: vm.resource, uid: vm.uid}))
  try {
    await runDstackSync(run, client, state, dstack, {
      configDir: options.configDir,
      fleet: options.fleet,
      org: options.org,
      owners: options.owners,
    })
    return {rented, synced: true}
  } catch (error) {
    run.warn(
      `the rented VMs were not added to dstack (${asTargonError(error).message}); they stay, with their limits: targon dstack sync --fleet ${options.fleet} (or the next scale) adds them`,
    )
    return {rented, synced: false}
  }
}
