/**
 * The config file (config.json in the config directory, 0600): the default profile's keys at the top level, so that a
 * file from before profiles needs no migration, the named profiles under `profiles`, and the `config use` choice.
 */
import {statSync} from 'node:fs'
import {join} from 'node:path'

import {assertConfigDir, assertSecretFile} from '../state/trust.js'
import {TargonError, usageError} from '../../core/errors.js'
import type {ConfigKey} from './table.js'

/** A profile name: lowercase letters, digits and hyphens. */
const PROFILE_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/
export const DEFAULT_PROFILE = 'default'

export function checkProfileName(raw: string, source: string): string {
  if (!PROFILE_NAME.test(raw))
    throw usageError(`${source} "${raw}" is not a profile name`, 'use lowercase letters, digits and hyphens, e.g. team')
  return raw
}

export function configFilePath(dir: string): string {
  return join(dir, 'config.json')
}

type ConfigStore = import('conf').default<Record<string, unknown>>

/**
 * The user's settings file, through conf (loaded lazily: it pulls in ajv, which most runs never need). Opened anew on
 * each use, with its trust checks: conf re-reads the file on every get anyway, so a cache of open stores would only
 * be process-wide state.
 */
async function openConfig(dir: string): Promise<ConfigStore> {
  const {default: Conf} = await import('conf')
  const path = configFilePath(dir)
  assertConfigDir(dir)
  assertSecretFile(path, 'config file')
  try {
    return new Conf<Record<string, unknown>>({
      accessPropertiesByDotNotation: false,
      configFileMode: 0o600,
      configName: 'config',
      cwd: dir,
      projectName: 'targon-fleet',
      projectSuffix: '',
    })
  } catch (error) {
    // The parser's message may quote the file's bytes, and the file holds the API key: only a position is kept.
    const position = /at position (\d+)/.exec((error as Error).message)?.[1]
    throw new TargonError('CONFIG', `config file ${path} is not valid JSON${position ? ` (at character ${position})` : ''}`, {
      hint: `fix or delete ${path}`,
    })
  }
}

/**
 * The raw value of one key of a profile in the config file, whatever its JSON type (a hand-edited file may hold
 * any); undefined when there is no file. The default profile is the file's top-level keys, so that a file from
 * before profiles needs no migration; the others live under `profiles.<name>`.
 */
export async function readStoredValue(key: ConfigKey, dir: string, profile = DEFAULT_PROFILE): Promise<unknown> {
  if (!configFileExists(dir)) return undefined
  const store = await openConfig(dir)
  return profile === DEFAULT_PROFILE ? store.get(key) : profileTable(store)[profile]?.[key]
}

/** Sets (a string) or deletes (undefined) one key of a profile; a profile that does not exist yet is created. */
export async function writeStoredValue(dir: string, profile: string, key: ConfigKey, value: string | undefined): Promise<void> {
  const store = await openConfig(dir)
  if (profile === DEFAULT_PROFILE) {
    if (value === undefined) store.delete(key)
    else store.set(key, value)
    return
  }

  const profiles = profileTable(store)
  const values = {...profiles[profile]}
  if (value === undefined) delete values[key]
  else values[key] = value
  store.set(PROFILES_KEY, {...profiles, [profile]: values})
}

/** The named profiles of the file (the default one is always there). */
export async function profileNames(dir: string): Promise<string[]> {
  return configFileExists(dir) ? Object.keys(profileTable(await openConfig(dir))) : []
}

/**
 * The `config use` choice, if any. A hand-edited choice that names no profile of the file is refused without being
 * quoted: a key pasted into the wrong field is still the key.
 */
export async function configuredProfile(dir: string): Promise<string | undefined> {
  if (!configFileExists(dir)) return undefined
  const store = await openConfig(dir)
  const chosen = store.get(CHOSEN_PROFILE_KEY)
  if (chosen === undefined || chosen === null || chosen === '' || chosen === DEFAULT_PROFILE) return undefined
  if (typeof chosen !== 'string' || !PROFILE_NAME.test(chosen) || !Object.hasOwn(profileTable(store), chosen))
    throw new TargonError('CONFIG', `config file ${store.path}: "${CHOSEN_PROFILE_KEY}" names no profile of the file`, {
      hint: 'run targon config use <profile> (or targon config use default)',
    })
  return chosen
}

/** `config use`: the profile for runs that name none (undefined: the default one). */
export async function chooseProfile(dir: string, profile: string | undefined): Promise<void> {
  const store = await openConfig(dir)
  if (profile === undefined || profile === DEFAULT_PROFILE) store.delete(CHOSEN_PROFILE_KEY)
  else store.set(CHOSEN_PROFILE_KEY, profile)
}

/** `config remove`: deletes a named profile, and the `config use` choice of it. */
export async function removeProfile(dir: string, profile: string): Promise<void> {
  const store = await openConfig(dir)
  const profiles = {...profileTable(store)}
  delete profiles[profile]
  store.set(PROFILES_KEY, profiles)
  if (store.get(CHOSEN_PROFILE_KEY) === profile) store.delete(CHOSEN_PROFILE_KEY)
}

/** Where the file keeps the named profiles, and the `config use` choice: beside the default profile's keys. */
const PROFILES_KEY = 'profiles'
const CHOSEN_PROFILE_KEY = 'profile'

function profileTable(store: ConfigStore): Record<string, Record<string, unknown>> {
  const table = store.get(PROFILES_KEY)
  if (table === undefined) return {}
  if (typeof table !== 'object' || table === null || Array.isArray(table))
    throw new TargonError('CONFIG', `config file ${store.path}: profiles must be an object of profiles`, {
      hint: `fix or delete ${store.path}`,
    })
  return table as Record<string, Record<string, unknown>>
}

function configFileExists(dir: string): boolean {
  try {
    statSync(configFilePath(dir))
    return true
  } catch {
    return false
  }
}
