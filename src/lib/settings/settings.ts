/**
 * Where settings come from. Precedence everywhere: flags > environment > config file.
 * The config file is read through conf (loaded lazily: it pulls in ajv) and only when a
 * value is not already given by a flag or the environment.
 */
import {chmodSync, mkdirSync, statSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {TargonError} from '../shell/errors.js'

export const DEFAULT_API_URL = 'https://api.targon.com'

/** Keys a user may keep in the config file (`targon config set KEY VALUE`). */
export const CONFIG_KEYS = ['api-key', 'org', 'fleet', 'max-price', 'image', 'dstack-version'] as const
export type ConfigKey = (typeof CONFIG_KEYS)[number]
/** As stored: a hand-edited file may hold any JSON type; config-values.ts validates what is read. */
export type ConfigValues = Partial<Record<ConfigKey, unknown>>

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TARGON_CONFIG_DIR) return env.TARGON_CONFIG_DIR
  const xdg = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(xdg, 'targon-fleet')
}

export function configFilePath(dir = configDir()): string {
  return join(dir, 'config.json')
}

/** Creates the config directory (0700) if needed and returns it. */
export function ensureConfigDir(dir = configDir()): string {
  try {
    mkdirSync(dir, {recursive: true, mode: 0o700})
    const mode = statSync(dir).mode & 0o777
    if (mode !== 0o700) chmodSync(dir, 0o700)
  } catch (error) {
    throw new TargonError('CONFIG', `cannot create the config directory ${dir}: ${(error as Error).message}`, {
      hint: 'make it writable, or point TARGON_CONFIG_DIR at a writable directory',
    })
  }

  return dir
}

export function apiOrigin(env: NodeJS.ProcessEnv = process.env): string {
  const raw = env.TARGON_API_URL || DEFAULT_API_URL
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new TargonError('CONFIG', `TARGON_API_URL "${raw}" is not a URL`, {hint: 'set it to an origin such as https://api.targon.com'})
  }

  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TargonError('CONFIG', `TARGON_API_URL "${raw}" must use http or https`, {hint: 'set it to an origin such as https://api.targon.com'})
  }

  // The client appends /tha/v3/...: a URL copied with that path would request /tha/v3/tha/v3/...
  return url.origin + url.pathname.replace(/\/+$/, '').replace(/\/tha\/v3$/i, '')
}

/**
 * A number of seconds from an environment variable, within [min, max]. Out-of-range values are refused (exit 3)
 * rather than clamped, so that a typo never silently changes a bound.
 */
export function envSeconds(name: string, fallback: number, range: {min: number; max: number}, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name]
  if (raw === undefined || raw.trim() === '') return fallback * 1000
  const seconds = Number(raw)
  if (!/^\s*\d+(\.\d+)?\s*$/.test(raw) || seconds < range.min || seconds > range.max) {
    throw new TargonError('CONFIG', `${name} "${raw}" is not a number of seconds from ${range.min} to ${range.max}`, {hint: `set it to e.g. ${fallback}, or unset it`})
  }

  return Math.round(seconds * 1000)
}

/** TARGON_HTTP_TIMEOUT: the whole-request deadline per attempt (default 60 s, at most an hour). */
export function httpTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return envSeconds('TARGON_HTTP_TIMEOUT', 60, {max: 3600, min: 1}, env)
}

/** TARGON_SHIM_HEALTH_TIMEOUT: how long shim-start waits for a healthy shim (default 60 s, at most an hour). */
export function shimHealthTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return envSeconds('TARGON_SHIM_HEALTH_TIMEOUT', 60, {max: 3600, min: 1}, env)
}

/** Refuses a secret-bearing file that group or others can read. */
export function assertPrivateFile(path: string, what: string): void {
  let mode: number
  try {
    mode = statSync(path).mode & 0o777
  } catch {
    return
  }

  if ((mode & 0o077) !== 0) {
    throw new TargonError('CONFIG', `${what} ${path} is readable by other users (mode ${mode.toString(8)})`, {
      hint: `run: chmod 600 ${path}`,
    })
  }
}

type ConfigStore = import('conf').default<ConfigValues>
/** One store per directory and process: conf re-reads the file on every get, so opening it again gains nothing. */
const openStores = new Map<string, Promise<ConfigStore>>()

/** The typed wrapper around conf for the user's settings file. */
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
  assertPrivateFile(path, 'config file')
  try {
    return new Conf<ConfigValues>({
      accessPropertiesByDotNotation: false,
      configFileMode: 0o600,
      configName: 'config',
      cwd: dir,
      projectName: 'targon-fleet',
      projectSuffix: '',
    })
  } catch (error) {
    throw new TargonError('CONFIG', `config file ${path} is not valid JSON: ${(error as Error).message.split('\n')[0]}`, {
      hint: `fix or delete ${path}`,
    })
  }
}

/** The raw value of one key in the config file, whatever its JSON type; undefined when there is no file. */
export async function readStoredValue(key: ConfigKey, dir = configDir()): Promise<unknown> {
  try {
    statSync(configFilePath(dir))
  } catch {
    return undefined
  }

  const config = await openConfig(dir)
  return config.get(key)
}
