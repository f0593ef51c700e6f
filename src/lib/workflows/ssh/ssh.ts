/**
 * `targon ssh` without its display: the VM (or, for --config, the fleet's running VMs) found in a fresh listing, each
 * one's address and pinned host key made into an OpenSSH command line, and the session itself (session.ts).
 */
import type {RunContext} from '../run-context.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type SshTarget, ensurePin, sshArgv} from '../../adapters/ssh/connect-info.js'
import {targetOf} from '../../domain/fleet/fan-out.js'
import {type KnownVm, findOneVm, readFleet, refusedNamesWarning} from '../../domain/fleet/fleet-read.js'
import {type OwnerScope, ownerScope, scoped} from '../../domain/fleet/owners.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import type {SshResult} from './schema.js'

/** `targon ssh` as asked (cli/requests/ssh.ts). */
export type SshRequest =
  | {kind: 'config'; target: string | undefined; fleetFlag: string | undefined}
  | {kind: 'connect'; target: string; fleetFlag: string | undefined; command: string[]; options: string[]; print: boolean}

type SshRun = Pick<RunContext, 'clock' | 'historyBudget' | 'localState' | 'org' | 'settings' | 'sshConnectMs' | 'warn'>

/** A line of progress (a host key pinned on first contact). */
type Info = (message: string) => void

/** ssh --config: each VM named, or every running VM of the fleet, as a host to write an entry for. */
export async function sshHosts(
  run: SshRun,
  client: TargonClient,
  request: Extract<SshRequest, {kind: 'config'}>,
  info: Info,
): Promise<{fleet: string; hosts: SshResult[]}> {
  const {fleet, owners, vms} = await listVms(run, client, request.fleetFlag)
  const chosen = request.target
    ? [findOneVm(vms, request.target, fleet, owners)]
    : scoped(vms, owners).inScope.filter((each) => each.owned && each.fleet === fleet && each.status === 'running')
  const refused = refusedNamesWarning(chosen.filter((vm) => vm.workload.name_refused))
  if (refused) run.warn(refused)
  const hosts: SshResult[] = []
  const connectMs = await run.sshConnectMs()
  for (const vm of chosen) hosts.push(await sshTo(vm, run.settings.dir, connectMs, [], [], info))
  return {fleet, hosts}
}

/** ssh VM: the OpenSSH command line that reaches it, with the request's command and forwarding options. */
export async function sshConnection(
  run: SshRun,
  client: TargonClient,
  request: Extract<SshRequest, {kind: 'connect'}>,
  info: Info,
): Promise<SshResult> {
  const {fleet, owners, vms} = await listVms(run, client, request.fleetFlag)
  const vm = findOneVm(vms, request.target, fleet, owners)
  return sshTo(vm, run.settings.dir, await run.sshConnectMs(), request.command, request.options, info)
}

/** The VMs not gone of a fresh listing (recorded in the ledger), the owner scope and the fleet their labels are in. */
async function listVms(
  run: SshRun,
  client: TargonClient,
  fleetFlag: string | undefined,
): Promise<{vms: KnownVm[]; owners: OwnerScope; fleet: string}> {
  const org = await run.org(client)
  const state = run.localState()
  const owners = await ownerScope(run.settings, false)
  const view = await readFleet(client, org, state, {
    clock: run.clock,
    historyBudget: run.historyBudget,
    readOwners: owners.owner !== null,
  })
  recordFleetRead(state, org, view, run.clock)
  const vms = view.vms.filter((vm) => !vm.gone)
  return {fleet: await run.settings.get('fleet', fleetFlag), owners, vms}
}

async function sshTo(vm: KnownVm, dir: string, connectMs: number, command: string[], options: string[], info: Info): Promise<SshResult> {
  const target: SshTarget = targetOf(vm, dir)
  const pinned = await ensurePin(target, info, connectMs)
  return {
    argv: sshArgv(target, command, options),
    host: target.host,
    host_key: pinned.hostKey,
    host_key_alias: pinned.alias,
    identity_file: target.identityFile,
    known_hosts_file: pinned.file,
    name: vm.name,
    port: target.port,
    uid: vm.uid,
    user: 'ubuntu',
  }
}
