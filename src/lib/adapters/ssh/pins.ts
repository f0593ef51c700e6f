/**
 * Host-key pins: one OpenSSH known_hosts file per VM in the config directory, keyed by the
 * workload uid (as the alias targon-<uid>) and its host:port. IPs and ports get reused, so
 * the uid is what counts. ~/.ssh/known_hosts is never read or written.
 */
import {mkdirSync, rmSync} from 'node:fs'
import {join} from 'node:path'

import {type LocalState, writeAtomically} from '../state/local-state.js'
import {childPath} from '../state/paths.js'
import {assertOwnDir, readOwnFile} from '../state/trust.js'
import {TargonError} from '../../core/errors.js'

export function hostKeyAlias(uid: string): string {
  return `targon-${uid}`
}

export function pinFile(configDir: string, uid: string): string {
  return childPath(join(configDir, 'known_hosts.d'), uid)
}

/** Pins in a directory that others own or can write could be forged: refused (exit 3), never trusted or changed. */
export function checkPinDir(configDir: string): void {
  assertOwnDir(join(configDir, 'known_hosts.d'), 'host-key directory')
}

/**
 * The pinned "type base64" key of a VM; undefined when it has no pin file. A pin file that another user owns or can
 * write is refused (CONFIG), never taken for a missing one: that would trust the next key anew.
 */
export function readPin(configDir: string, uid: string): string | undefined {
  checkPinDir(configDir)
  let text: string
  try {
    text = readOwnFile(pinFile(configDir, uid))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    if (error instanceof TargonError) throw error
    throw new TargonError('CONFIG', `cannot read the host-key pin ${pinFile(configDir, uid)}: ${(error as Error).message}`, {
      hint: 'move it away if it is not yours; targon then pins the key from the VM record, or on first contact',
    })
  }

  const line = text.split('\n').find((entry) => entry.trim() && !entry.startsWith('#'))
  return line?.split(/\s+/).slice(1, 3).join(' ') || undefined
}

export function writePin(configDir: string, uid: string, host: string, port: number, key: string): string {
  mkdirSync(join(configDir, 'known_hosts.d'), {mode: 0o700, recursive: true})
  checkPinDir(configDir)
  const path = pinFile(configDir, uid)
  writeAtomically(path, `${hostKeyAlias(uid)},[${host}]:${port} ${key}\n`)
  return path
}

export function removePin(configDir: string, uid: string): void {
  rmSync(pinFile(configDir, uid), {force: true})
}

/**
 * Pins a VM's host key (as "type base64") and keeps it in the VM's local record too, when there is one: a pin
 * file lost later is then restored from the record rather than trusted anew.
 */
export function pinHostKey(
  state: LocalState,
  vm: {org: string; name: string; uid: string},
  endpoint: {host: string; port: number},
  hostKey: {key: string; fingerprint: string},
): void {
  writePin(state.dir, vm.uid, endpoint.host, endpoint.port, hostKey.key)
  const record = state.readVm(vm.org, vm.name)
  if (record?.uid !== vm.uid) return
  state.updateVm(vm.org, vm.name, {
    host_key: {alias: hostKeyAlias(vm.uid), fingerprint: hostKey.fingerprint, host: endpoint.host, key: hostKey.key, port: endpoint.port},
  })
}
