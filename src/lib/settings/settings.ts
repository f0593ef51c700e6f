/**
 * Every setting the CLI reads, where it may come from, and how it is checked: one table, one
 * resolver. Precedence everywhere: flag > environment variable > config file > default.
 *
 * A bad value given as a flag is a usage error (exit 2); a bad value in the environment or in
 * the config file is a configuration error (exit 3) that names where it came from. The config
 * file is read only when neither a flag nor the environment gives the value.
 */
import {mkdirSync, statSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {DEFAULT_DSTACK_VERSION, validateDstackVersion} from '../bootstrap/dstack-version.js'
import {DEFAULT_FLEET, validateFleet} from '../fleet/naming.js'
import {assertConfigDir, assertSecretFile} from '../state/trust.js'
import {TargonError, usageError} from '../core/errors.js'
import {parseDuration, parsePrice} from '../core/input.js'

export const DEFAULT_IMAGE = 'ubuntu-24-04-lts-595'

/** An organization slug (the API's own rule). */
const ORG_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/
/** An owner's name, as the owner setting takes it and as an owner project's name must carry it (fleet/owners.ts). */
export const OWNER_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/
/** Printable ASCII without spaces: anything else cannot travel in an HTTP header and would fail as a network error. */
const API_KEY = /^[\x21-\x7e]{8,}$/

interface SettingSpec<T> {
  /** Kept in config.json and managed by `targon config`. */
  stored: boolean
  env?: string
  flag?: string
  default?: T
  /** Checks a raw value, throwing a one-line usage error that names `source` (a flag, a variable or a key). */
  parse: (raw: string, source: string) => T
}

const text =
  (pattern: RegExp, what: string, hint: string) =>
  (raw: string, source: string): string => {
    if (!pattern.test(raw)) throw usageError(`${source} "${raw}" is not ${what}`, hint)
    return raw
  }

/** Seconds from an environment variable, within [min, max], as ms. Refused, not clamped, so that a typo never changes a bound. */
const seconds =
  (min: number, max: number, example: number) =>
  (raw: string, source: string): number => {
    const value = Number(raw)
    if (!/^\d+(\.\d+)?$/.test(raw) || value < min || value > max)
      throw usageError(`${source} "${raw}" is not a number of seconds from ${min} to ${max}`, `set it to e.g. ${example}, or unset it`)
    return Math.round(value * 1000)
  }

/** A whole number of days from an environment variable, within [min, max]. */
const days =
  (min: number, max: number, example: number) =>
  (raw: string, source: string): number => {
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value < min || value > max)
      throw usageError(`${source} "${raw}" is not a whole number of days from ${min} to ${max}`, `set it to e.g. ${example}, or unset it`)
    return value
  }

export const SETTINGS = {
  // In the order `targon config list` shows the stored ones.
  'api-key': {
    env: 'TARGON_API_KEY',
    parse: (raw: string, source: string) => {
      // Never echo the value: it is a secret.
      if (!API_KEY.test(raw))
        throw usageError(
          `${source}: that API key looks wrong (too short, or with spaces, control or non-ASCII characters)`,
          'paste the whole key from targon.com, without quotes or line breaks',
        )
      return raw
    },
    stored: true,
  },
  org: {
    env: 'TARGON_ORG',
    flag: '--org',
    parse: text(ORG_SLUG, 'a valid slug', 'use lowercase letters, digits and hyphens, e.g. --org acme'),
    stored: true,
  },
  // Who this config directory rents for in a shared org (see fleet/owners.ts); never derived, only set.
  owner: {
    env: 'TARGON_OWNER',
    parse: text(OWNER_PATTERN, 'an owner name', 'use up to 32 lowercase letters, digits and hyphens, e.g. alice'),
    stored: true,
  },
  fleet: {default: DEFAULT_FLEET, flag: '--fleet', parse: (raw: string) => validateFleet(raw), stored: true},
  'max-price': {flag: '--max-price', parse: (raw: string, source: string) => parsePrice(raw, source), stored: true},
  image: {
    default: DEFAULT_IMAGE,
    flag: '--image',
    parse: text(/^[a-z0-9][a-z0-9._-]*$/, 'an image name', `use a name from the org's VM images, e.g. ${DEFAULT_IMAGE}`),
    stored: true,
  },
  'dstack-version': {
    default: DEFAULT_DSTACK_VERSION,
    flag: '--dstack-version',
    parse: (raw: string) => validateDstackVersion(raw),
    stored: true,
  },
  // A secret (a Slack webhook URL carries its token): never quoted back, masked by config list.
  'notify-url': {
    env: 'TARGON_NOTIFY_URL',
    flag: '--notify',
    parse: secretUrl('the webhook URL, e.g. https://hooks.slack.com/services/…'),
    stored: true,
  },
  // A secret too (a ping URL lets anyone mark the guard alive): the dead-man switch that targon sweep pings.
  'heartbeat-url': {
    env: 'TARGON_HEARTBEAT_URL',
    flag: '--heartbeat-url',
    parse: secretUrl('the ping URL of the check, e.g. https://hc-ping.com/<uuid>'),
    stored: true,
  },
  // sweep --warn from the config file, so that the guard's crontab line or unit need not carry it.
  'warn-window': {parse: (raw: string) => parseDuration(raw, '--warn'), stored: true},
  // sweep --min-runway and --idle-limit from the config file, likewise: limits the guard enforces without a flag.
  'min-runway': {parse: (raw: string) => parseDuration(raw, '--min-runway'), stored: true},
  'idle-limit': {parse: (raw: string) => parseDuration(raw, '--idle-limit'), stored: true},
  'api-url': {default: 'https://api.targon.com', env: 'TARGON_API_URL', parse: apiOrigin, stored: false},
  'http-timeout': {default: 60_000, env: 'TARGON_HTTP_TIMEOUT', parse: seconds(1, 3600, 60), stored: false},
  'pull-retry-delay': {default: 5000, env: 'TARGON_PULL_RETRY_DELAY', parse: seconds(0, 600, 5), stored: false},
  'shim-health-timeout': {default: 60_000, env: 'TARGON_SHIM_HEALTH_TIMEOUT', parse: seconds(1, 3600, 60), stored: false},
  // The floor between two inventory reads of up --wait; lower only against a simulator, not against Targon.
  'capacity-poll-interval': {default: 15_000, env: 'TARGON_CAPACITY_POLL_INTERVAL', parse: seconds(0.1, 3600, 15), stored: false},
  'state-watch-interval': {default: 5000, env: 'TARGON_STATE_WATCH_INTERVAL', parse: seconds(0.1, 600, 5), stored: false},
  // How often the idle sampler on a VM samples activity (set at up; seconds in the environment, for tests).
  'idle-sample-interval': {default: 60_000, env: 'TARGON_IDLE_SAMPLE_INTERVAL', parse: seconds(1, 3600, 60), stored: false},
  // How long a mutation with an unclear answer is reconciled (the listing or the state watched) before it is sent
  // again: a create's listing is watched this long, a DELETE answered 5xx a third of it. Lower only for a simulator.
  'reconcile-window': {default: 30_000, env: 'TARGON_RECONCILE_WINDOW', parse: seconds(0.1, 600, 30), stored: false},
  // How long the spend ledger keeps a month: whole months that ended longer ago are deleted by targon cost.
  'ledger-days': {default: 400, env: 'TARGON_LEDGER_DAYS', parse: days(1, 36_500, 400), stored: false},
} satisfies Record<string, SettingSpec<unknown>>

export type SettingKey = keyof typeof SETTINGS
type Spec<K extends SettingKey> = (typeof SETTINGS)[K]
export type SettingValue<K extends SettingKey> = ReturnType<Spec<K>['parse']>
type WithDefault = {[K in SettingKey]: Spec<K> extends {default: unknown} ? K : never}[SettingKey]

/** Keys a user may keep in the config file (`targon config set KEY VALUE`). */
export {CONFIG_KEYS} from './config-keys.js'
export type ConfigKey = {[K in SettingKey]: Spec<K>['stored'] extends true ? K : never}[SettingKey]

/** A setting by precedence: the flag's value if given, else the environment, else the config file, else the default. */
export async function resolveSetting<K extends WithDefault>(key: K, flag?: string, env?: NodeJS.ProcessEnv): Promise<SettingValue<K>>
export async function resolveSetting<K extends SettingKey>(
  key: K,
  flag?: string,
  env?: NodeJS.ProcessEnv,
): Promise<SettingValue<K> | undefined>
export async function resolveSetting<K extends SettingKey>(
  key: K,
  flag?: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<SettingValue<K> | undefined> {
  const spec: SettingSpec<SettingValue<K>> = SETTINGS[key] as SettingSpec<SettingValue<K>>
  if (flag !== undefined && spec.flag) return spec.parse(flag.trim(), spec.flag)
  const raw = spec.env ? env[spec.env]?.trim() : undefined
  const fromEnv = spec.env && raw ? asConfigError(() => spec.parse(raw, spec.env as string)) : undefined
  if (!spec.stored) return fromEnv ?? spec.default
  const profile = await activeProfile(env)
  const storedRaw = await readStoredValue(key as ConfigKey, configDir(env), profile.name)
  const stored =
    storedRaw === undefined || storedRaw === null || storedRaw === '' ? undefined : parseStored(key as ConfigKey, storedRaw, spec)
  // A profile named for this run (--profile, TARGON_PROFILE) decides the key and the org over the environment; a
  // key of the environment that differs from the profile's is refused: one of the two is the wrong account.
  if (profile.source !== 'default' && profile.source !== 'config' && (key === 'api-key' || key === 'org') && stored !== undefined) {
    if (key === 'api-key' && fromEnv !== undefined && fromEnv !== stored)
      throw new TargonError('CONFIG', `TARGON_API_KEY differs from the api-key of profile ${profile.name} (chosen by ${profile.by})`, {
        hint: `unset TARGON_API_KEY to use the profile's key, or drop ${profile.by} to use the environment's`,
      })
    return stored
  }

  return fromEnv ?? stored ?? spec.default
}

/** The profile a run reads its settings from, and what chose it. */
export interface ActiveProfile {
  name: string
  source: 'config' | 'default' | 'env' | 'flag'
  /** As a person reads it: --profile, TARGON_PROFILE, "targon config use", or "the default". */
  by: string
}

/** A profile name: lowercase letters, digits and hyphens. */
const PROFILE_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/
export const DEFAULT_PROFILE = 'default'

let profileFlag: string | undefined
/** The run's --profile (every command takes it); set once per command, before any setting is read. */
export function setProfileFlag(name: string | undefined): void {
  profileFlag = name
}

export function checkProfileName(raw: string, source: string): string {
  if (!PROFILE_NAME.test(raw))
    throw usageError(`${source} "${raw}" is not a profile name`, 'use lowercase letters, digits and hyphens, e.g. team')
  return raw
}

/**
 * --profile, then TARGON_PROFILE, then the `config use` choice, then the default profile (the top-level keys). A run
 * that takes its key from TARGON_API_KEY and names no profile keeps the default profile whatever `config use` says:
 * a cron line acts where it did before.
 */
export async function activeProfile(env: NodeJS.ProcessEnv = process.env): Promise<ActiveProfile> {
  const dir = configDir(env)
  const named =
    profileFlag !== undefined
      ? {by: '--profile', name: checkProfileName(profileFlag, '--profile'), source: 'flag' as const}
      : env.TARGON_PROFILE?.trim()
        ? {
            by: 'TARGON_PROFILE',
            name: asConfigError(() => checkProfileName((env.TARGON_PROFILE as string).trim(), 'TARGON_PROFILE')),
            source: 'env' as const,
          }
        : undefined
  if (named) {
    if (named.name !== DEFAULT_PROFILE && !(await profileNames(dir)).includes(named.name))
      throw new TargonError('CONFIG', `there is no profile ${named.name} (named by ${named.by})`, {
        hint: `create it with targon config set --profile ${named.name} api-key, or see targon config list`,
      })
    return named
  }

  const chosen = await configuredProfile(dir)
  if (chosen && env.TARGON_API_KEY?.trim())
    return {by: 'the default, as TARGON_API_KEY is set and names no profile', name: DEFAULT_PROFILE, source: 'default'}
  return chosen ? {by: 'targon config use', name: chosen, source: 'config'} : {by: 'the default', name: DEFAULT_PROFILE, source: 'default'}
}

/** A value from the config file, checked as `config set` would; a number is accepted where a number is meant. */
export function parseStored<T>(
  key: ConfigKey,
  stored: unknown,
  spec: SettingSpec<T> = SETTINGS[key] as SettingSpec<T>,
  dir = configDir(),
): T {
  const where = `config file ${configFilePath(dir)}: ${key}`
  const hint = key === 'api-key' ? 'run targon config set api-key' : `run targon config set ${key} <value>, or targon config unset ${key}`
  const raw = typeof stored === 'number' && key === 'max-price' ? String(stored) : stored
  if (typeof raw !== 'string')
    throw new TargonError('CONFIG', `${where} must be a string, not ${Array.isArray(raw) ? 'an array' : typeof raw}`, {hint})
  return asConfigError(() => spec.parse(raw, key), where, hint, raw)
}

/**
 * A parse error as CONFIG. A value read from the config file is never quoted back (`hidden`): a key pasted into the
 * wrong field is still the key, and these messages end up in cron logs.
 */
function asConfigError<T>(parse: () => T, where?: string, hint?: string, hidden?: string): T {
  try {
    return parse()
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    const message = hidden ? error.message.replaceAll(` "${hidden}"`, '').replaceAll(hidden, '…') : error.message
    throw new TargonError('CONFIG', where ? `${where}: ${message}` : message, {hint: hint ?? error.hint})
  }
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TARGON_CONFIG_DIR) return env.TARGON_CONFIG_DIR
  const xdg = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(xdg, 'targon-fleet')
}

export function configFilePath(dir = configDir()): string {
  return join(dir, 'config.json')
}

/** Creates the config directory (0700) if needed and returns it; an existing one must be trusted (see trust.ts). */
export function ensureConfigDir(dir = configDir()): string {
  try {
    mkdirSync(dir, {mode: 0o700, recursive: true})
  } catch (error) {
    throw new TargonError('CONFIG', `cannot create the config directory ${dir}: ${(error as Error).message}`, {
      hint: 'make it writable, or point TARGON_CONFIG_DIR at a writable directory',
    })
  }

  assertConfigDir(dir)
  return dir
}

/** TARGON_API_URL: an http(s) origin; a trailing /tha/v3 (copied from an API path) is dropped, since the client appends it. */
function apiOrigin(raw: string, source: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw usageError(`${source} "${raw}" is not a URL`, 'set it to an origin such as https://api.targon.com')
  }

  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw usageError(`${source} "${raw}" must use http or https`, 'set it to an origin such as https://api.targon.com')
  // The API key travels in every request: in clear text only to this machine (a local simulator).
  if (url.protocol === 'http:' && !isLoopback(url.hostname))
    throw usageError(`${source} "${raw}" uses plain http to another host, which would send the API key in clear text`, 'use https')
  return url.origin + url.pathname.replace(/\/+$/, '').replace(/\/tha\/v3$/i, '')
}

/**
 * A notify or heartbeat URL: https, or plain http to this machine; the value is never quoted, as it carries a token.
 * `example` says in the hint what to give.
 */
function secretUrl(example: string): (raw: string, source: string) => string {
  return (raw, source) => {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw usageError(`${source} is not a URL`, `give ${example}`)
    }

    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))
      throw usageError(`${source} must use https (plain http only to this machine)`, `give ${example}`)
    return url.href
  }
}

/** localhost, 127.0.0.0/8 or ::1 (a URL's hostname keeps the brackets of an IPv6 address). */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}

type ConfigStore = import('conf').default<Record<string, unknown>>
/** One store per directory and process: conf re-reads the file on every get, so opening it again gains nothing. */
const openStores = new Map<string, Promise<ConfigStore>>()

/** The user's settings file, through conf (loaded lazily: it pulls in ajv, which most runs never need). */
export function openConfig(dir = configDir()): Promise<ConfigStore> {
  let store = openStores.get(dir)
  if (!store) {
    store = loadConfig(dir)
    openStores.set(dir, store)
    store.catch(() => openStores.delete(dir))
  }

  return store
}

async function loadConfig(dir: string): Promise<ConfigStore> {
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
export async function readStoredValue(key: ConfigKey, dir = configDir(), profile = DEFAULT_PROFILE): Promise<unknown> {
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
export async function profileNames(dir = configDir()): Promise<string[]> {
  return configFileExists(dir) ? Object.keys(profileTable(await openConfig(dir))) : []
}

/**
 * The `config use` choice, if any. A hand-edited choice that names no profile of the file is refused without being
 * quoted: a key pasted into the wrong field is still the key.
 */
export async function configuredProfile(dir = configDir()): Promise<string | undefined> {
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
