/**
 * The project SSH key: ed25519, generated once per config directory, unencrypted (dstack's SSH
 * fleets refuse encrypted keys), private half 0600. key-registrar.ts registers it with each org.
 */
import {createHash, randomBytes} from 'node:crypto'
import {linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import type {ParsedKey} from 'ssh2'

import {TargonError, localWriteError} from '../../core/errors.js'
import {ensureConfigDir} from '../state/trust.js'
import {assertConfigDir, assertOwnDir, assertSecretFile} from '../state/trust.js'

export interface ProjectKey {
  privateKeyPath: string
  publicKeyPath: string
  /** "ssh-ed25519 AAAA… targon-fleet" */
  publicKey: string
}

/** Where the project's private key lives (the public key is beside it, with .pub). */
export function privateKeyPath(configDir: string): string {
  return join(configDir, 'keys', 'id_ed25519')
}

/**
 * The private key's path for a use of it (ssh, exec, cp, a dstack fleet file), refused as up refuses it: readable
 * by others, or in a keys/ directory others can write (ssh and dstack would reject it anyway, later and less clearly).
 */
export function checkedPrivateKeyPath(configDir: string): string {
  const keyFile = privateKeyPath(configDir)
  assertConfigDir(configDir)
  assertOwnDir(dirname(keyFile), 'key directory')
  assertSecretFile(keyFile, 'private key')
  return keyFile
}

/** Loads the project key pair, generating it on first use (safe against concurrent first uses). */
export async function ensureProjectKey(configDir: string): Promise<ProjectKey> {
  ensureConfigDir(configDir)
  const keyFile = privateKeyPath(configDir)
  mkdirSync(dirname(keyFile), {mode: 0o700, recursive: true})
  const publicKeyPath = `${keyFile}.pub`
  const {default: ssh2} = await import('ssh2')

  if (!exists(keyFile)) {
    // ssh2 occasionally (about 1 in 250) emits an ed25519 key that it cannot parse back: keep only one that parses.
    let pair = ssh2.utils.generateKeyPairSync('ed25519', {comment: 'targon-fleet'})
    while (ssh2.utils.parseKey(pair.private) instanceof Error) pair = ssh2.utils.generateKeyPairSync('ed25519', {comment: 'targon-fleet'})
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
    throw new TargonError('CONFIG', `the project key ${keyFile} cannot be read`, {hint: `move it away and run again to generate a new one`})
  }

  const publicKey = `${key.type} ${key.getPublicSSH().toString('base64')} targon-fleet`
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
  return {privateKeyPath: keyFile, publicKey, publicKeyPath}
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

export function keyName(publicKey: string): string {
  return `targon-cli-${createHash('sha256').update(keyBlob(publicKey)).digest('hex').slice(0, 8)}`
}
