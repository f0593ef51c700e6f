/**
 * dstack's rules for SSH fleet specs (dstack 0.21.2, src/dstack/_internal/server/services/fleets.py): what makes a
 * spec invalid, which changes an existing fleet accepts in place, and how hosts compare. Pure functions over specs
 * parsed by models.ts; the simulator applies them to its state.
 */
import ssh2 from 'ssh2'

import {BACKEND_FLEET_FIELDS, changedFields, isObject, pythonList, sameValue} from './models.js'

type Json = Record<string, unknown>

/** ServerClientError (core/errors.py): answered as 400 `{"detail": [{"msg", "code"}]}` (server/app.py). */
export class DstackRefusal extends Error {
  constructor(
    readonly msg: string,
    readonly code: 'error' | 'resource_exists' | 'resource_not_exists' = 'error',
  ) {
    super(msg)
  }
}

/** An entry of `ssh_config.hosts`: a hostname, or an object with its own parameters. */
export type HostEntry = Json | string

export const hostnameOf = (host: HostEntry): string => (typeof host === 'string' ? host : String(host.hostname))

export function sshConfigOf(spec: Json): Json | null {
  const configuration = spec.configuration as Json
  return isObject(configuration.ssh_config) ? configuration.ssh_config : null
}

export function hostsOf(spec: Json): HostEntry[] {
  return (sshConfigOf(spec)?.hosts as HostEntry[] | undefined) ?? []
}

/** _validate_fleet_spec_and_set_defaults (services/fleets.py), for the SSH fleets this simulator serves. */
export function validateFleetSpec(spec: Json): void {
  const configuration = spec.configuration as Json
  if (configuration.name !== null && !/^[a-z][a-z0-9-]{1,40}$/.test(configuration.name as string))
    throw new DstackRefusal("Resource name should match regex '^[a-z][a-z0-9-]{1,40}$'")
  const ssh = sshConfigOf(spec)
  if (ssh === null && configuration.nodes === null) throw new DstackRefusal('No ssh_config or nodes specified')
  if (ssh === null) throw new DstackRefusal('The simulator serves SSH fleets only (ssh_config)')
  const unsupported = BACKEND_FLEET_FIELDS.filter((field) => configuration[field] !== null)
  if (unsupported.length > 0)
    throw new DstackRefusal(`SSH fleet configuration does not support the following fields: ${pythonList(unsupported)}`)
  for (const host of ssh.hosts as HostEntry[]) {
    const own = typeof host === 'string' ? {} : host
    if (ssh.ssh_key === null && (own.ssh_key ?? null) === null) throw new DstackRefusal(`No ssh key specified for host ${hostnameOf(host)}`)
    if (ssh.user === null && (own.user ?? null) === null) throw new DstackRefusal(`No ssh user specified for host ${hostnameOf(host)}`)
  }

  if (isObject(ssh.ssh_key)) validateKey(ssh.ssh_key)
  for (const host of ssh.hosts as HostEntry[]) if (typeof host !== 'string' && isObject(host.ssh_key)) validateKey(host.ssh_key)
  const internal = (ssh.hosts as HostEntry[]).filter((host) => typeof host !== 'string' && host.internal_ip !== null).length
  if (internal !== 0 && internal !== (ssh.hosts as HostEntry[]).length)
    throw new DstackRefusal('internal_ip must be specified for all hosts')
  if (internal > 0 && ssh.network !== null) throw new DstackRefusal('internal_ip is mutually exclusive with network')
}

/** _validate_ssh_key: an RSA, ECDSA or Ed25519 private key without a passphrase (dstack parses it with paramiko). */
function validateKey(key: Json): void {
  if (key.private === null) throw new DstackRefusal('Private key not provided')
  const parsed = ssh2.utils.parseKey(key.private as string)
  const first = Array.isArray(parsed) ? parsed[0] : parsed
  if (first instanceof Error || !first || !/^(ssh-rsa|ssh-ed25519|ecdsa-sha2-)/.test(first.type))
    throw new DstackRefusal(
      'Unsupported key type. The key type should be RSA, ECDSA, or Ed25519 and should not be encrypted with passphrase.',
    )
}

/** _remove_fleet_spec_sensitive_info: the fleet's key and each host's key are never answered. */
export function withoutSecrets(spec: Json): Json {
  const copy = structuredClone(spec)
  const ssh = sshConfigOf(copy)
  if (ssh) {
    ssh.ssh_key = null
    for (const host of ssh.hosts as HostEntry[]) if (typeof host !== 'string') host.ssh_key = null
  }

  return copy
}

/**
 * _calculate_ssh_hosts_changes: hosts keyed by hostname (so two entries with one hostname are one, the last one
 * winning), compared without `identity_file` (the client reads that file and sends `ssh_key`).
 */
export function hostChanges(
  current: HostEntry[],
  next: HostEntry[],
): {added: Map<string, HostEntry>; removed: Set<string>; changed: string[]} {
  const currentHosts = new Map(current.map((host) => [hostnameOf(host), host]))
  const nextHosts = new Map(next.map((host) => [hostnameOf(host), host]))
  const added = new Map([...nextHosts].filter(([name]) => !currentHosts.has(name)))
  const removed = new Set([...currentHosts.keys()].filter((name) => !nextHosts.has(name)))
  const changed: string[] = []
  for (const [name, host] of currentHosts) {
    const other = nextHosts.get(name)
    if (other === undefined) continue
    if (typeof host === 'string' || typeof other === 'string') {
      if (host !== other) changed.push(name)
    } else if (!sameValue(comparable(host), comparable(other))) changed.push(name)
  }

  return {added, changed, removed}
}

function comparable(host: Json): Json {
  const copy: Json = {...structuredClone(host), identity_file: null}
  if (isObject(copy.proxy_jump)) copy.proxy_jump.identity_file = ''
  return copy
}

/** _check_can_update(...): every changed field must be one of `updatable`. */
function checkOnly(current: Json, next: Json, updatable: string[]): string[] {
  const changed = changedFields(current, next)
  if (!changed.every((field) => updatable.includes(field)))
    throw new DstackRefusal(`Failed to update fields ${pythonList(changed)}. Can only update ${pythonList(updatable)}.`)
  return changed
}

/**
 * _check_can_update_fleet_spec: an SSH fleet can change in place only in `ssh_config.hosts`, and a host it keeps must
 * keep its parameters (`Hosts configuration changed`). Compared with the keys, as dstack compares them.
 */
export function checkCanUpdate(current: Json, next: Json): void {
  if (!checkOnly(current, next, ['configuration', 'configuration_path', 'merged_profile']).includes('configuration')) return
  const currentConfiguration = current.configuration as Json
  const nextConfiguration = next.configuration as Json
  if (!isObject(nextConfiguration.ssh_config)) throw new DstackRefusal('Fleet type changed from SSH to Cloud, cannot update')
  if (!checkOnly(currentConfiguration, nextConfiguration, ['ssh_config']).includes('ssh_config')) return
  const currentSsh = currentConfiguration.ssh_config as Json
  const nextSsh = nextConfiguration.ssh_config
  if (!checkOnly(currentSsh, nextSsh, ['hosts']).includes('hosts')) return
  const {changed} = hostChanges(currentSsh.hosts as HostEntry[], nextSsh.hosts as HostEntry[])
  if (changed.length > 0) throw new DstackRefusal(`Hosts configuration changed, cannot update: ${pythonList(changed)}`)
}

export function canUpdate(current: Json, next: Json): boolean {
  try {
    checkCanUpdate(current, next)
    return true
  } catch (error) {
    if (error instanceof DstackRefusal) return false
    throw error
  }
}

/** How dstack will connect to a host (create_fleet_ssh_instance_model): the host's own parameters over the fleet's. */
export function connectionOf(spec: Json, host: HostEntry): {hostname: string; port: number; user: string} {
  const ssh = sshConfigOf(spec) as Json
  const own = typeof host === 'string' ? {} : host
  return {
    hostname: hostnameOf(host),
    port: Number(own.port ?? ssh.port ?? 22),
    user: String(own.user ?? ssh.user),
  }
}
