/**
 * What a sync must change in a dstack SSH fleet, from the hosts it should hold and the fleet as dstack's plan shows it.
 * dstack keys hosts by hostname and refuses to change a kept host in place (a new port: "Hosts configuration
 * changed"), and delete_instances ends an instance without taking its host out of the spec: such a host is taken out
 * by one apply and put back by the next. A host with a dstack job on it is never removed.
 */
import {type DstackFleet, type DstackHost, type DstackInstance, isBusy, isLive, specHosts} from '../../adapters/dstack/schemas.js'

export interface FleetChanges {
  /** Wanted, and held as wanted by a live instance. */
  unchanged: DstackHost[]
  /** Wanted, and not in the spec. */
  added: DstackHost[]
  /** Wanted, in the spec with another port or without a live instance: out with one apply, back in with the next. */
  readded: DstackHost[]
  /** Not wanted: their live instances end with delete_instances, and the apply drops them from the spec. */
  removed: DstackHost[]
  /** Not wanted, but a dstack job runs on them: left in the fleet. */
  busy: DstackHost[]
  /** The live, idle instances of the removed hosts. */
  deleteNums: number[]
  /** The spec's hosts after the first apply (only when hosts are re-added). */
  interim: DstackHost[] | null
  /** The spec's hosts at the end; null when the fleet needs no apply. */
  final: DstackHost[] | null
}

const isBusyHost = (live: Map<string, DstackInstance>, hostname: string) => {
  const instance = live.get(hostname)
  return instance !== undefined && isBusy(instance)
}

const key = (host: DstackHost) => `${host.hostname}:${host.port}`

export function planChanges(wanted: DstackHost[], fleet: DstackFleet): FleetChanges {
  const inSpec = new Map(specHosts(fleet).map((host) => [host.hostname, host]))
  const instances = fleet.instances.filter((instance) => instance.hostname !== null)
  const live = new Map(instances.filter((instance) => isLive(instance)).map((instance) => [instance.hostname as string, instance]))
  const wantedNames = new Set(wanted.map((host) => host.hostname))
  const changes: FleetChanges = {added: [], busy: [], deleteNums: [], final: null, interim: null, readded: [], removed: [], unchanged: []}
  for (const host of wanted) {
    const held = inSpec.get(host.hostname)
    if (!held) changes.added.push(host)
    else if (held.port === host.port && live.has(host.hostname)) changes.unchanged.push(host)
    else if (isBusyHost(live, host.hostname)) changes.busy.push(held)
    else changes.readded.push(host)
  }

  for (const host of inSpec.values()) {
    if (wantedNames.has(host.hostname)) continue
    const instance = live.get(host.hostname)
    if (instance && isBusy(instance)) {
      changes.busy.push(host)
      continue
    }

    changes.removed.push(host)
    if (instance) changes.deleteNums.push(instance.instance_num)
  }

  const kept = [...changes.unchanged, ...changes.busy]
  if (changes.readded.length > 0) changes.interim = kept
  const final = [...kept, ...changes.added, ...changes.readded]
  const current = new Set(specHosts(fleet).map((host) => key(host)))
  const same = final.length === current.size && final.every((host) => current.has(key(host)))
  changes.final = same && changes.readded.length === 0 ? null : final
  return changes
}
