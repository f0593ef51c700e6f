/**
 * Which of the org's VMs each guard covers, for guard status: this directory's local guard covers the VMs recorded
 * here (of its owner, when it has one), and a team guard covers the VMs that carry its key, as the full read of each
 * VM says (the listing's summaries lack the keys). Reading it changes nothing; a VM whose keys cannot be read is
 * reported as unknown, never as covered.
 */
import {readFileSync} from 'node:fs'

import type {TargonClient} from '../../adapters/targon/client.js'
import {type GuardKey, listGuardKeys} from '../../adapters/ssh/guard-keys.js'
import {keyName, privateKeyPath} from '../../adapters/ssh/project-key.js'
import {LocalState} from '../../adapters/state/local-state.js'
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import type {ListingRun} from '../../domain/fleet/run.js'
import {type KnownVm, readFleet} from '../../domain/fleet/fleet-read.js'
import type {InstalledGuard} from './installed.js'
import type {CoveredVm, VmCoverage} from './schema.js'

/** Full reads of workloads in flight at once. */
const KEY_READS_IN_FLIGHT = 8

export interface CoverageAsk {
  org: string
  configDir: string
  /** The guards installed for this directory and profile. */
  guards: InstalledGuard[]
}

export async function vmCoverage(client: TargonClient, run: ListingRun, ask: CoverageAsk): Promise<VmCoverage> {
  const local = ask.guards.find((guard) => !guard.marker.team)
  const teamHere = ask.guards.some((guard) => guard.marker.team)
  const keys = await listGuardKeys(client, ask.org)
  const view = await readFleet(client, ask.org, new LocalState(ask.configDir), {
    clock: run.clock,
    historyBudget: run.historyBudget,
    readOwners: local?.marker.owner != null,
  })
  const vms = view.vms.filter((vm) => vm.owned && !vm.gone)
  const carried = keys.length === 0 ? new Map<string, string[] | undefined>() : await keysOf(client, ask.org, vms, run.warn)
  const ownKey = teamHere ? ownGuardKeyName(ask.configDir) : null

  const byLocal = (vm: KnownVm) =>
    local !== undefined && vm.record !== undefined && (local.marker.owner === null || vm.owner === local.marker.owner)
  const byKey = (vm: KnownVm, key: GuardKey) => carried.get(vm.uid)?.includes(key.uid) ?? false
  const guards: VmCoverage['guards'] = [
    ...(local ? [{here: true, key: null, kind: 'local' as const, owner: local.marker.owner, vms: vms.filter(byLocal).map(refOf)}] : []),
    ...keys.map((key) => ({
      here: key.name === ownKey,
      key,
      kind: 'team' as const,
      owner: null,
      vms: vms.filter((vm) => byKey(vm, key)).map(refOf),
    })),
  ]
  const uncovered = vms.filter((vm) => !byLocal(vm) && !keys.some((key) => byKey(vm, key)))
  return {
    guards,
    not_covered: uncovered.filter((vm) => keys.length === 0 || carried.get(vm.uid) !== undefined).map(refOf),
    org: ask.org,
    unknown: uncovered.filter((vm) => keys.length > 0 && carried.get(vm.uid) === undefined).map(refOf),
  }
}

/** The key uids each VM carries; undefined for a VM whose read failed (one warning names how many). */
async function keysOf(
  client: TargonClient,
  org: string,
  vms: KnownVm[],
  warn: (message: string) => void,
): Promise<Map<string, string[] | undefined>> {
  const failures: string[] = []
  const read = await mapBounded(vms, KEY_READS_IN_FLIGHT, async (vm) => {
    try {
      return await client.getWorkloadSshKeys(org, vm.uid)
    } catch (error) {
      failures.push(asTargonError(error).message)
      return undefined
    }
  })
  if (failures.length > 0)
    warn(`the keys of ${countOf(failures.length, 'VM')} could not be read (${failures[0]}): whether a team guard covers them is unknown`)
  return new Map(vms.map((vm, index) => [vm.uid, read[index]]))
}

/** The name in the org of this directory's team guard key; null when it has none. */
function ownGuardKeyName(configDir: string): string | null {
  try {
    return keyName(readFileSync(`${privateKeyPath(configDir, 'guard')}.pub`, 'utf8'), 'guard')
  } catch {
    return null
  }
}

function refOf(vm: KnownVm): CoveredVm {
  return {name: vm.name, owner: vm.owner ?? null, uid: vm.uid}
}
