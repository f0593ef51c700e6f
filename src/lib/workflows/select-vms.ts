/**
 * The VMs a run over many of them works on (exec, cp, run, jobs): from a fresh listing, which the run records
 * (recordFleetRead) as every workflow that lists does, the fleet read itself only reading.
 */
import {TargonError} from '../core/errors.js'
import {checkSshFiles} from '../adapters/ssh/connect-info.js'
import type {LocalState} from '../adapters/state/local-state.js'
import type {TargonClient} from '../adapters/targon/client.js'
import type {ListingRun} from '../domain/fleet/run.js'
import {type OwnerScope, scoped} from '../domain/fleet/owners.js'
import {type KnownVm, findOneVm, readFleet} from '../domain/fleet/fleet-read.js'
import {recordFleetRead} from '../domain/ledger/ledger.js'

export interface VmSelection {
  org: string
  fleet: string
  /** With an owner set, a fleet is the owner's VMs of it, and names resolve among them first. */
  owners: OwnerScope
  /** VM names, uids or labels; empty: every running VM of the fleet. */
  targets: string[]
}

/**
 * The VMs to work on: each target must match exactly one VM (else NOT_FOUND or NAME_CONFLICT); a fleet must have one
 * running. What the listing's checks found (a name refused at the API boundary, say) is a warning of the run, never fatal.
 */
export async function selectVms(run: ListingRun, client: TargonClient, state: LocalState, selection: VmSelection): Promise<KnownVm[]> {
  // A key or pin directory that fails its check fails the run (exit 3), not each VM in turn.
  checkSshFiles(state.dir)
  const {owners} = selection
  const view = await readFleet(client, selection.org, state, {
    clock: run.clock,
    historyBudget: run.historyBudget,
    readOwners: owners.owner !== null,
  })
  for (const problem of view.problems) run.warn(problem)
  recordFleetRead(state, selection.org, view, run.clock)
  const live = view.vms.filter((vm) => !vm.gone)
  const vms =
    selection.targets.length > 0
      ? [...new Map(selection.targets.map((target) => findOneVm(live, target, selection.fleet, owners)).map((vm) => [vm.uid, vm])).values()]
      : scoped(live, owners).inScope.filter((vm) => vm.owned && vm.fleet === selection.fleet && vm.status === 'running')
  if (vms.length === 0)
    throw new TargonError('NOT_FOUND', `no running VMs in fleet ${selection.fleet}`, {hint: 'run targon status, or name VMs with --vms'})
  return vms
}
