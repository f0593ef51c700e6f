/**
 * `targon dstack sync`: dstack's SSH fleet targon-F holds exactly fleet F's bootstrapped, running VMs. The VMs come
 * from the API's listing (this tool's, in the owner's scope), the fleet from dstack's plan; fleet-sync.ts makes the
 * change.
 */
import type {DstackClient} from '../../adapters/dstack/client.js'
import type {DstackSettings} from '../../adapters/dstack/connect.js'
import type {DstackHost} from '../../adapters/dstack/schemas.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type OwnerScope, scoped} from '../../domain/fleet/owners.js'
import {snapshot} from '../../domain/fleet/workloads.js'
import {recordSnapshot} from '../../domain/ledger/ledger.js'
import type {RunContext} from '../run-context.js'
import {syncFleet} from './fleet-sync.js'
import {type FleetHost, addressOf, dstackFleetName, projectKeyPair, readyHosts, refuseSharedHostnames} from './hosts.js'
import type {DstackSyncResult} from './schema.js'

export interface DstackSyncOptions {
  org: string
  fleet: string
  owners: OwnerScope
  configDir: string
}

export async function runDstackSync(
  run: Pick<RunContext, 'clock' | 'historyBudget' | 'signal' | 'warn'> & {info?: (line: string) => void},
  client: TargonClient,
  state: LocalState,
  dstack: {client: DstackClient; settings: DstackSettings},
  options: DstackSyncOptions,
): Promise<DstackSyncResult> {
  const view = await snapshot(client, options.org, state, {clock: run.clock, historyBudget: run.historyBudget, readOwners: true})
  recordSnapshot(state, options.org, view, run.clock)
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
