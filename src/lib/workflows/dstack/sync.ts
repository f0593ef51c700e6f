/**
 * `targon dstack sync`: dstack's SSH fleet targon-F holds exactly fleet F's bootstrapped, running VMs. The VMs come
 * from the API's listing (this tool's, in the owner's scope), the fleet from dstack's plan; fleet-sync.ts makes the
 * change.
 */
import type {DstackHost} from '../../adapters/dstack/schemas.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type OwnerScope, scoped} from '../../domain/fleet/owners.js'
import {type FleetView, readFleet} from '../../domain/fleet/fleet-read.js'
import {asTargonError} from '../../core/errors.js'
import type {DstackHandle} from './open.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import type {RunContext} from '../run-context.js'
import {syncFleet} from './fleet-sync.js'
import {type FleetHost, addressOf, dstackFleetName, projectKeyPair, readyHosts, refuseSharedHostnames, targonFleetOf} from './hosts.js'
import type {DstackSyncResult, DstackSyncSummary, SweepDstackSync} from './schema.js'

export interface DstackSyncOptions {
  org: string
  fleet: string
  owners: OwnerScope
  configDir: string
}

type SyncRun = Pick<RunContext, 'clock' | 'historyBudget' | 'signal' | 'warn'> & {info?: (line: string) => void}

export async function runDstackSync(
  run: SyncRun,
  client: TargonClient,
  state: LocalState,
  dstack: DstackHandle,
  options: DstackSyncOptions,
): Promise<DstackSyncResult> {
  const view = await readFleet(client, options.org, state, {clock: run.clock, historyBudget: run.historyBudget, readOwners: true})
  recordFleetRead(state, options.org, view, run.clock)
  return syncFromView(run, view, dstack, options)
}

/** The sync of one fleet from a listing already made. */
async function syncFromView(
  run: SyncRun,
  view: FleetView,
  dstack: DstackHandle,
  options: Omit<DstackSyncOptions, 'org'>,
): Promise<DstackSyncResult> {
  const vms = scoped(
    view.vms.filter((vm) => vm.owned && !vm.gone && vm.fleet === options.fleet),
    options.owners,
  ).inScope
  const hosts = readyHosts(vms.map(addressOf), dstack.settings.hostPattern)
  const left = vms.length - hosts.length
  if (left > 0) run.warn(`${left} VM(s) of fleet ${options.fleet} are not bootstrapped and running: not in the dstack fleet`)
  refuseSharedHostnames(hosts, dstack.settings.hostPattern)
  const name = dstackFleetName(options.fleet)
  const before = dstack.client.requests
  const outcome = await syncFleet(dstack.client, name, projectKeyPair(options.configDir), hosts, {
    clock: run.clock,
    info: run.info,
    signal: run.signal,
  })
  for (const host of outcome.busy)
    run.warn(`${host.hostname}:${host.port} runs a dstack job: left in ${name} until it ends (the next sync removes it)`)
  const named = (each: DstackHost[]) => each.map((host) => withVm(host, hosts))
  return {
    action: outcome.action,
    added: named(outcome.added),
    busy: named(outcome.busy),
    fleet: options.fleet,
    dstack_fleet: name,
    project: dstack.settings.project,
    removed: named(outcome.removed),
    requests: dstack.client.requests - before,
    retries: outcome.retries,
    unchanged: named(outcome.unchanged),
  }
}

/** A host with the VM it stands for, where one of the fleet's VMs has it. */
function withVm(host: DstackHost, vms: FleetHost[]): DstackSyncResult['added'][number] {
  const vm = vms.find((each) => each.hostname === host.hostname && each.port === host.port)
  return {hostname: host.hostname, name: vm?.name ?? null, port: host.port, uid: vm?.uid ?? null}
}

/**
 * The guard's part (targon sweep): each fleet it covers (`fleet`, else every fleet) that has a targon-* dstack fleet
 * is synced from one listing taken after the sweep's deletions (what is left), so that no dstack fleet holds a deleted
 * VM past one guard interval. A failure is a warning, and a summary that says so: it never touches the sweep's
 * deletions.
 */
export async function syncCoveredFleets(
  run: SyncRun,
  client: TargonClient,
  state: LocalState,
  dstack: DstackHandle,
  options: Omit<DstackSyncOptions, 'fleet'> & {fleet: string | null},
): Promise<SweepDstackSync> {
  const summaries: DstackSyncSummary[] = []
  try {
    const fleets = (await dstack.client.listFleets())
      .map((fleet) => targonFleetOf(fleet.name))
      .filter((fleet): fleet is string => fleet !== null && (options.fleet === null || fleet === options.fleet))
    if (fleets.length === 0) return {error: null, fleets: summaries}
    const view = await readFleet(client, options.org, state, {clock: run.clock, historyBudget: run.historyBudget, readOwners: true})
    for (const fleet of fleets) {
      const before = dstack.client.requests
      try {
        summaries.push(summaryOf(await syncFromView(run, view, dstack, {...options, fleet})))
      } catch (error) {
        const message = asTargonError(error).message
        run.warn(`the dstack fleet ${dstackFleetName(fleet)} was not synced (${message}); the next sweep tries again`)
        summaries.push(failedSummary(fleet, message, dstack.client.requests - before))
      }
    }

    return {error: null, fleets: summaries}
  } catch (error) {
    const message = asTargonError(error).message
    run.warn(`the dstack fleets were not synced (${message}); the next sweep tries again`)
    return {error: message, fleets: summaries}
  }
}

function summaryOf(result: DstackSyncResult): DstackSyncSummary {
  return {
    action: result.action,
    added: result.added.length,
    busy: result.busy.length,
    dstack_fleet: result.dstack_fleet,
    error: null,
    fleet: result.fleet,
    removed: result.removed.length,
    requests: result.requests,
    retries: result.retries,
    unchanged: result.unchanged.length,
  }
}

function failedSummary(fleet: string, error: string, requests: number): DstackSyncSummary {
  const none = {added: 0, busy: 0, removed: 0, retries: 0, unchanged: 0}
  return {...none, action: 'failed', dstack_fleet: dstackFleetName(fleet), error, fleet, requests}
}
