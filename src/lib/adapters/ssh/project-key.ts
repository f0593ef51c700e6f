/**
 * The config directory's SSH keys, ed25519, generated once, unencrypted (dstack's SSH fleets refuse encrypted keys),
 * private half 0600: the project key, which up puts on the VMs it makes, and the team guard's key (guard install
 * --team), which every up in the org adds to its VMs so that one always-on machine can read and enforce their limits.
 * key-registrar.ts registers them with each org.
 */
import {createHash, randomBytes} from 'node:crypto'
import {linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import type {ParsedKey} from 'ssh2'

import {TargonError, localWriteError} from '../../core/errors.js'
import {ensureConfigDir} from '../state/trust.js'
import {assertConfigDir, assertOwnDir, assertSecretFile} from '../state/trust.js'

/** Which of the directory's keys: the project key, or the team guard's. */
export type KeyRole = 'guard' | 'project'

const KEY_FILES: Record<KeyRole, string> = {guard: 'guard_ed25519', project: 'id_ed25519'}
const KEY_COMMENTS: Record<KeyRole, string> = {guard: 'targon-fleet-guard', project: 'targon-fleet'}
/** The prefix of each key's name in the org: up finds the team guards' keys by theirs. */
const NAME_PREFIXES: Record<KeyRole, string> = {guard: 'targon-guard-', project: 'targon-cli-'}

export interface ProjectKey {
  role: KeyRole
  privateKeyPath: string
  publicKeyPath: string
  /** "ssh-ed25519 AAAA… targon-fleet" */
  publicKey: string
}

/** Where a private key lives (the public key is beside it, with .pub). */
export function privateKeyPath(configDir: string, role: KeyRole = 'project'): string {
  return join(configDir, 'keys', KEY_FILES[role])
}

/** Whether this directory is a team guard's: it has the team guard's key (guard install --team made it). */
export function hasGuardKey(configDir: string): boolean {
  return exists(privateKeyPath(configDir, 'guard'))
}

/**
 * The private key's path for a use of it (ssh, exec, cp, a dstack fleet file), refused as up refuses it: readable
 * by others, or in a keys/ directory others can write (ssh and dstack would reject it anyway, later and less clearly).
 */
export function checkedPrivateKeyPath(configDir: string, role: KeyRole = 'project'): string {
  const keyFile = privateKeyPath(configDir, role)
  assertConfigDir(configDir)
  assertOwnDir(dirname(keyFile), 'key directory')
  assertSecretFile(keyFile, 'private key')
  return keyFile
}

/** Loads a key pair of the directory, generating it on first use (safe against concurrent first uses). */
export async function ensureProjectKey(configDir: string, role: KeyRole = 'project'): Promise<ProjectKey> {
  ensureConfigDir(configDir)
  const keyFile = privateKeyPath(configDir, role)
  const comment = KEY_COMMENTS[role]
  mkdirSync(dirname(keyFile), {mode: 0o700, recursive: true})
  const publicKeyPath = `${keyFile}.pub`
  const {default: ssh2} = await import('ssh2')

  if (!exists(keyFile)) {
    // ssh2 occasionally (about 1 in 250) emits an ed25519 key that it cannot parse back: keep only one that parses.
    let pair = ssh2.utils.generateKeyPairSync('ed25519', {comment})
    while (ssh2.utils.parseKey(pair.private) instanceof Error) pair = ssh2.utils.generateKeyPairSync('ed25519', {comment})
    const temp = `${keyFile}.${randomBytes(4).toString('hex')}.tmp`
    try {
      writeFileSync(temp, pair.private, {flag: 'wx', mode: 0o600})
      linkSync(temp, keyFile) // atomic; fails if another process won the race
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw localWriteError(error, keyFile, configDir)
    } finally {
      // Also a temp file that a full disk left empty.
      rmSync(temp, {force: true})
    }
  }

  assertOwnDir(dirname(keyFile), 'key directory')
  assertSecretFile(keyFile, 'private key')
  // parseKey returns an Error instead of throwing, and may return several keys.
  const parsed = ssh2.utils.parseKey(readFileSync(keyFile)) as ParsedKey | ParsedKey[] | Error
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (!key || key instanceof Error) {
    throw new TargonError('CONFIG', `the ${role === 'guard' ? "team guard's" : 'project'} key ${keyFile} cannot be read`, {
      hint: `move it away and run again to generate a new one`,
    })
  }

  const publicKey = `${key.type} ${key.getPublicSSH().toString('base64')} ${comment}`
  if (!exists(publicKeyPath) || readFileSync(publicKeyPath, 'utf8').trim() !== publicKey) {
    const temp = `${publicKeyPath}.${randomBytes(4).toString('hex')}.tmp`
    try {
      writeFileSync(temp, `${publicKey}\n`, {flag: 'wx', mode: 0o644})
      renameSync(temp, publicKeyPath)
    } catch (error) {
      rmSync(temp, {force: true})
      throw localWriteError(error, publicKeyPath, configDir)
    }
  }
  return {privateKeyPath: keyFile, publicKey, publicKeyPath, role}
}

function exists(path: string): boolean {
  try {
    statSync(path)
    return true
  } catch {
    return false
  }
}

/** The key type and base64 blob, ignoring the comment. */
export function keyBlob(publicKey: string | null | undefined): string {
  return (publicKey ?? '').trim().split(/\s+/).slice(0, 2).join(' ')
}

export function sameKey(a: string | null | undefined, b: string | null | undefined): boolean {
  return keyBlob(a) !== '' && keyBlob(a) === keyBlob(b)
}

/** The key's name in the org: its role's prefix and a hash of its blob. */
export function keyName(publicKey: string, role: KeyRole = 'project'): string {
  return `${NAME_PREFIXES[role]}${createHash('sha256').update(keyBlob(publicKey)).digest('hex').slice(0, 8)}`
}

/** Whether a key registered in the org is a team guard's, by its name (the one up adds to every VM it makes). */
export function isGuardKeyName(name: string | null | undefined): boolean {
  return new RegExp(`^${NAME_PREFIXES.guard}[0-9a-f]{8}$`).test(name ?? '')
}
