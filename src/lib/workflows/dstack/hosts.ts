/**
 * Which VMs a dstack fleet holds, and by what name dstack reaches each: a targon fleet's bootstrapped, running VMs
 * with an address, by their IP, or by dstack-host-pattern where VMs share one.
 */
import {readFileSync} from 'node:fs'

import {type DstackFleet, type DstackInstance, isLive, specHosts} from '../../adapters/dstack/schemas.js'
import {TargonError} from '../../core/errors.js'
import {hostByPattern} from '../../adapters/settings/host-pattern.js'
import {checkedPrivateKeyPath} from '../../adapters/ssh/project-key.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {SshKeyPair} from './fleet-sync.js'

/** The dstack fleet that holds a targon fleet's VMs. */
export const dstackFleetName = (fleet: string) => `targon-${fleet}`
/** The targon fleet of a dstack fleet targon keeps, or null for any other. */
export const targonFleetOf = (dstackFleet: string): string | null => /^targon-([a-z0-9]{1,12})$/.exec(dstackFleet)?.[1] ?? null

export interface VmAddress {
  uid: string
  name: string | null
  bootstrapped: boolean | null
  status: string
  public_ip: string | null
  ssh_port: number | null
}

export interface FleetHost {
  uid: string
  name: string | null
  hostname: string
  port: number
  /** The VM's public IP (the hostname unless a pattern names it). */
  ip: string
}

/** What status and sync read of a listed VM. */
export function addressOf(vm: KnownVm): VmAddress {
  return {
    bootstrapped: vm.record?.bootstrapped ?? null,
    name: vm.name,
    public_ip: vm.workload.state?.public_ip ?? null,
    ssh_port: vm.workload.state?.ssh_port ?? null,
    status: vm.status,
    uid: vm.uid,
  }
}

/** How dstack reaches a VM: its IP, or the pattern's name for it; null when it has no address. */
export function hostOf(vm: VmAddress, pattern: string | null): FleetHost | null {
  if (!vm.public_ip || !vm.ssh_port) return null
  const hostname =
    pattern === null ? vm.public_ip : hostByPattern(pattern, {ip: vm.public_ip, name: vm.name, port: vm.ssh_port, uid: vm.uid})
  return hostname === null ? null : {hostname, ip: vm.public_ip, name: vm.name, port: vm.ssh_port, uid: vm.uid}
}

/** The fleet's members: bootstrapped, running, with an address. */
export function readyHosts(vms: VmAddress[], pattern: string | null): FleetHost[] {
  return vms.flatMap((vm) => {
    const host = vm.bootstrapped === true && vm.status === 'running' ? hostOf(vm, pattern) : null
    return host ? [host] : []
  })
}

/** The hostnames that more than one VM would have. */
export function sharedHostnames(hosts: FleetHost[]): Map<string, FleetHost[]> {
  const byName = new Map<string, FleetHost[]>()
  for (const host of hosts) byName.set(host.hostname, [...(byName.get(host.hostname) ?? []), host])
  return new Map([...byName].filter(([, each]) => each.length > 1))
}

/** dstack keys an SSH fleet's hosts by name: two VMs under one name cannot both be in it, and break every later change. */
export function refuseSharedHostnames(hosts: FleetHost[], pattern: string | null): void {
  const [hostname, vms] = [...sharedHostnames(hosts)][0] ?? []
  if (hostname === undefined || vms === undefined) return
  throw new TargonError(
    'CONFIG',
    `${vms.map((vm) => vm.name ?? vm.uid).join(' and ')} would both be ${hostname} in dstack, which keys an SSH fleet's hosts by name`,
    {
      hint:
        pattern === null
          ? 'give each VM its own DNS name: targon config set dstack-host-pattern "{uid}.{ip}.sslip.io" (a wildcard DNS), then sync again'
          : 'put {uid} or {name} in dstack-host-pattern, so that each VM has its own name',
    },
  )
}

/** A live instance of a targon-* dstack fleet that stands for a VM. */
export interface HeldHost {
  vm: KnownVm
  fleet: string
  instance: DstackInstance
}

/**
 * The live instances of targon-* fleets that stand for these VMs: by the host's name (its IP, or the pattern's name)
 * and port, as a sync puts them there.
 */
export function heldHosts(fleets: DstackFleet[], vms: KnownVm[], pattern: string | null): HeldHost[] {
  return vms.flatMap((vm) => {
    const address = addressOf(vm)
    const names = [hostOf(address, null), pattern === null ? null : hostOf(address, pattern)].filter((host) => host !== null)
    return fleets.flatMap((fleet) => {
      if (targonFleetOf(fleet.name) === null) return []
      const hosts = specHosts(fleet).filter((host) => names.some((name) => name.hostname === host.hostname && name.port === host.port))
      return fleet.instances
        .filter((instance) => isLive(instance) && hosts.some((host) => host.hostname === instance.hostname))
        .map((instance) => ({fleet: fleet.name, instance, vm}))
    })
  })
}

/** The project key as dstack needs it for an SSH fleet (it connects to the hosts with it). */
export function projectKeyPair(configDir: string): SshKeyPair {
  const keyFile = checkedPrivateKeyPath(configDir)
  return {private: readFileSync(keyFile, 'utf8'), public: readFileSync(`${keyFile}.pub`, 'utf8').trim()}
}
