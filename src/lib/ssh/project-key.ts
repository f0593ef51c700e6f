/**
 * The project SSH key (ed25519, generated once per config directory) and its registration
 * with each org: registered once, its uid cached and verified, never duplicated.
 */
import {createHash, randomBytes} from 'node:crypto'
import {linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import type {ParsedKey} from 'ssh2'

import type {TargonClient} from '../targon/client.js'
import {TargonError} from '../shell/errors.js'
import {withFileLock} from '../state/lock.js'
import {assertPrivateFile, ensureConfigDir} from '../settings/settings.js'
import type {LocalState} from '../state/local-state.js'

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
    writeFileSync(temp, pair.private, {mode: 0o600})
    try {
      linkSync(temp, keyFile) // atomic; fails if another process won the race
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    } finally {
      rmSync(temp, {force: true})
    }
  }

  assertPrivateFile(keyFile, 'private key')
  // parseKey returns an Error instead of throwing, and may return several keys.
  const parsed = ssh2.utils.parseKey(readFileSync(keyFile)) as ParsedKey | ParsedKey[] | Error
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  if (!key || key instanceof Error) {
    throw new TargonError('CONFIG', `the project key ${keyFile} cannot be read`, {hint: `move it away and run again to generate a new one`})
  }

  const publicKey = `${key.type} ${key.getPublicSSH().toString('base64')} targon-fleet`
  if (!exists(publicKeyPath) || readFileSync(publicKeyPath, 'utf8').trim() !== publicKey)
    writeFileSync(publicKeyPath, `${publicKey}\n`, {mode: 0o644})
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

/**
 * Makes sure the org knows our key and returns its uid. A cached uid costs one GET to
 * verify; otherwise the account's keys are searched before anything is created, under a
 * lock so that concurrent first runs register one key.
 */
export async function ensureKeyRegistered(client: TargonClient, org: string, state: LocalState, key: ProjectKey): Promise<string> {
  const verified = async (uid: string | undefined): Promise<string | undefined> => {
    if (!uid) return undefined
    try {
      const remote = await client.getSshKey(org, uid)
      return sameKey(remote.public_key_raw, key.publicKey) ? uid : undefined
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') return undefined
      throw error
    }
  }

  const cached = state.readOrgCache(org).ssh_key_uid
  const fromCache = await verified(cached)
  if (fromCache) return fromCache

  return withFileLock(`${state.orgFile(org)}.lock`, async () => {
    const cachedNow = state.readOrgCache(org).ssh_key_uid
    if (cachedNow && cachedNow !== cached) {
      const fromOtherProcess = await verified(cachedNow)
      if (fromOtherProcess) return fromOtherProcess
    }

    const existing = (await client.listSshKeys(org)).find((remote) => sameKey(remote.public_key_raw, key.publicKey))
    const uid = existing?.uid ?? (await client.createSshKey(org, {name: keyName(key.publicKey), ssh_key: key.publicKey})).uid
    state.writeOrgCache(org, {...state.readOrgCache(org), ssh_key_uid: uid})
    return uid
  })
}
