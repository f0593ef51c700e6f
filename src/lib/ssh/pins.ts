/**
 * Host-key pins: one OpenSSH known_hosts file per VM in the config directory, keyed by the
 * workload uid (as the alias targon-<uid>) and its host:port. IPs and ports get reused, so
 * the uid is what counts. ~/.ssh/known_hosts is never read or written.
 */
import {mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {assertPrivateDir} from '../settings/settings.js'
import {childPath} from '../state/paths.js'

export function hostKeyAlias(uid: string): string {
  return `targon-${uid}`
}

export function pinFile(configDir: string, uid: string): string {
  return childPath(join(configDir, 'known_hosts.d'), uid)
}

/** Pins in a directory that others can write could be forged: refused (exit 3), never trusted or changed. */
export function checkPinDir(configDir: string): void {
  assertPrivateDir(join(configDir, 'known_hosts.d'), 'host-key directory')
}

/** The pinned "type base64" key of a VM, if any. */
export function readPin(configDir: string, uid: string): string | undefined {
  checkPinDir(configDir)
  try {
    const line = readFileSync(pinFile(configDir, uid), 'utf8')
      .split('\n')
      .find((entry) => entry.trim() && !entry.startsWith('#'))
    return line?.split(/\s+/).slice(1, 3).join(' ') || undefined
  } catch {
    return undefined
  }
}

export function writePin(configDir: string, uid: string, host: string, port: number, key: string): string {
  mkdirSync(join(configDir, 'known_hosts.d'), {mode: 0o700, recursive: true})
  checkPinDir(configDir)
  const path = pinFile(configDir, uid)
  writeFileSync(path, `${hostKeyAlias(uid)},[${host}]:${port} ${key}\n`, {mode: 0o600})
  return path
}

export function removePin(configDir: string, uid: string): void {
  rmSync(pinFile(configDir, uid), {force: true})
}
