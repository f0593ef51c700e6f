/**
 * `targon config`: the user's settings in the 0600 config file, checked by the settings table
 * (settings.ts) on the way in and on the way out. The API key is read from stdin or a hidden
 * prompt, never from argv, and never printed unmasked.
 */
import {type ConfigResult, configJsonKey} from '../contract.js'
import {usageError} from '../shell/errors.js'
import {
  CONFIG_KEYS,
  type ConfigKey,
  SETTINGS,
  configFilePath,
  ensureConfigDir,
  openConfig,
  parseStored,
  readStoredValue,
} from './settings.js'

export function parseKey(key: string): ConfigKey {
  if (!(CONFIG_KEYS as readonly string[]).includes(key))
    throw usageError(`unknown config key "${key}"`, `use one of: ${CONFIG_KEYS.join(', ')}`)
  return key as ConfigKey
}

function mask(key: ConfigKey, value: string): string {
  return key === 'api-key' ? `${'*'.repeat(8)}${value.slice(-4)}` : value
}

/** The given settings of the file (all by default), checked, masked, under their JSON names. */
export async function readValues(dir: string, keys: readonly ConfigKey[] = CONFIG_KEYS): Promise<ConfigResult> {
  const values: Record<string, string | null> = {}
  for (const key of keys) {
    const stored = await readStoredValue(key, dir)
    values[configJsonKey(key)] =
      stored === undefined || stored === null || stored === '' ? null : mask(key, String(parseStored(key, stored, undefined, dir)))
  }

  return {path: configFilePath(dir), values}
}

/** Stores a setting; the result shows that setting only, so that a bad value elsewhere in the file cannot fail it. */
export async function setValue(dir: string, key: ConfigKey, raw: string): Promise<ConfigResult> {
  const value = String(SETTINGS[key].parse(raw.trim(), key))
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
