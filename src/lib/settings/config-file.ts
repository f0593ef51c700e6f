/**
 * `targon config`: validated user settings in the 0600 config file (conf). The API key is
 * read from stdin or a hidden prompt, never from argv, and never printed unmasked. A value
 * read back from the file, hand-edited or not, passes the same validation as `config set`.
 */

import {validateDstackVersion} from '../bootstrap/runner.js'
import {TargonError, usageError} from '../shell/errors.js'
import {validateFleet} from '../fleet/naming.js'
import {parsePrice} from '../shell/input.js'
import {CONFIG_KEYS, type ConfigKey, configDir, configFilePath, ensureConfigDir, openConfig, readStoredValue} from './settings.js'
import {type ConfigResult, configJsonKey} from '../contract.js'

/** An organization slug (the API's own rule). */
export const ORG_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/
/** Printable ASCII without spaces: anything else cannot travel in an HTTP header and would fail as a network error. */
const API_KEY = /^[\x21-\x7e]{8,}$/



const VALIDATORS: Record<ConfigKey, (value: string) => string> = {
  'api-key': (value) => {
    if (!API_KEY.test(value)) throw usageError('that API key looks wrong (too short, or with spaces, control or non-ASCII characters)', 'paste the whole key from targon.com')
    return value
  },
  'dstack-version': (value) => validateDstackVersion(value),
  fleet: (value) => validateFleet(value),
  image: (value) => {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(value)) throw usageError(`image "${value}" is not an image name`, 'use a name from the org\'s VM images, e.g. ubuntu-24-04-lts-595')
    return value
  },
  'max-price': (value) => String(parsePrice(value, 'max-price')),
  org: (value) => {
    if (!ORG_SLUG.test(value)) throw usageError(`org "${value}" is not a valid slug`, 'use lowercase letters, digits and hyphens')
    return value
  },
}

export function parseKey(key: string): ConfigKey {
  if (!(CONFIG_KEYS as readonly string[]).includes(key)) throw usageError(`unknown config key "${key}"`, `use one of: ${CONFIG_KEYS.join(', ')}`)
  return key as ConfigKey
}

function mask(key: ConfigKey, value: string | undefined): string | null {
  if (value === undefined) return null
  return key === 'api-key' ? `${'*'.repeat(8)}${value.slice(-4)}` : value
}

/**
 * One setting from the config file, validated as `config set` would; undefined when unset. A bad value is
 * CONFIG (exit 3) naming the key. A number is accepted for max-price, where a number is meant.
 */
export async function readConfigValue(key: ConfigKey, dir = configDir()): Promise<string | undefined> {
  const stored = await readStoredValue(key, dir)
  if (stored === undefined || stored === null || stored === '') return undefined
  const fix = key === 'api-key' ? 'run targon config set api-key' : `run targon config set ${key} <value>, or targon config unset ${key}`
  const value = typeof stored === 'number' && key === 'max-price' ? String(stored) : stored
  if (typeof value !== 'string') {
    throw new TargonError('CONFIG', `config file ${configFilePath(dir)}: ${key} must be a string, not ${Array.isArray(value) ? 'an array' : typeof value}`, {hint: fix})
  }

  try {
    return VALIDATORS[key](value)
  } catch (error) {
    throw new TargonError('CONFIG', `config file ${configFilePath(dir)}: ${key}: ${(error as Error).message}`, {hint: fix})
  }
}

export async function resolveApiKey(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const fromEnv = env.TARGON_API_KEY?.trim()
  if (fromEnv) {
    if (!API_KEY.test(fromEnv)) {
      throw new TargonError('CONFIG', 'TARGON_API_KEY is not an API key: too short, or with spaces, control or non-ASCII characters', {hint: 'export the whole key from targon.com, without quotes or line breaks'})
    }

    return fromEnv
  }

  const fromConfig = await readConfigValue('api-key')
  if (fromConfig) return fromConfig
  throw new TargonError('AUTH', 'no Targon API key is configured', {
    hint: 'export TARGON_API_KEY=<key>, or store it with: targon config set api-key',
  })
}

/** The given settings of the file (all by default), masked, under their JSON names. */
export async function readValues(dir: string, keys: readonly ConfigKey[] = CONFIG_KEYS): Promise<ConfigResult> {
  const values: Record<string, string | null> = {}
  for (const key of keys) values[configJsonKey(key)] = mask(key, await readConfigValue(key, dir))
  return {path: configFilePath(dir), values}
}

/** Stores a setting; the result shows that setting only, so that a bad value elsewhere in the file cannot fail it. */
export async function setValue(dir: string, key: ConfigKey, raw: string): Promise<ConfigResult> {
  const value = VALIDATORS[key](raw.trim())
  ensureConfigDir(dir)
  const config = await openConfig(dir)
  config.set(key, value)
  return readValues(dir, [key])
}

export async function unsetValue(dir: string, key: ConfigKey): Promise<ConfigResult> {
  const config = await openConfig(dir)
  config.delete(key)
  return readValues(dir, [key])
}
