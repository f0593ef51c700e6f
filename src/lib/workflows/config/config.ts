/**
 * `targon config`: the user's settings in the 0600 config file, checked by the settings table
 * (settings/table.ts) on the way in and on the way out. The API key is read from stdin or a hidden
 * prompt, never from argv, and never printed unmasked.
 */
import {type ConfigResult, configJsonKey} from './schema.js'
import {usageError} from '../../core/errors.js'
import {maskedNotifyUrl} from '../../adapters/notify/notify.js'
import {type SettingsResolver, parseStored} from '../../adapters/settings/resolve.js'
import {
  DEFAULT_PROFILE,
  checkProfileName,
  configFilePath,
  configuredProfile,
  profileNames,
  readStoredValue,
  writeStoredValue,
} from '../../adapters/settings/store.js'
import {CONFIG_KEYS, type ConfigKey, SETTINGS} from '../../adapters/settings/table.js'
import {ensureConfigDir} from '../../adapters/state/trust.js'

export function parseKey(key: string): ConfigKey {
  if (!(CONFIG_KEYS as readonly string[]).includes(key))
    throw usageError(`unknown config key "${key}"`, `use one of: ${CONFIG_KEYS.join(', ')}`)
  return key as ConfigKey
}

function mask(key: ConfigKey, value: string): string {
  if (key === 'api-key' || key === 'dstack-token') return `${'*'.repeat(8)}${value.slice(-4)}`
  return key === 'notify-url' || key === 'heartbeat-url' ? maskedNotifyUrl(value) : value
}

/**
 * The profile a config command works on: --profile, then TARGON_PROFILE, then the `config use` choice, then the
 * default one. Unlike a run's (activeProfile), the environment's API key does not matter here, and a named profile
 * need not exist yet: `config set` creates it.
 */
export async function targetProfile(settings: SettingsResolver): Promise<string> {
  if (settings.profileFlag !== undefined) return checkProfileName(settings.profileFlag, '--profile')
  const fromEnv = settings.profileFromEnvironment()
  if (fromEnv) return checkProfileName(fromEnv, 'TARGON_PROFILE')
  return (await configuredProfile(settings.dir)) ?? DEFAULT_PROFILE
}

/** Refuses a named profile that the file does not hold. */
export async function existingProfile(dir: string, profile: string): Promise<string> {
  if (profile !== DEFAULT_PROFILE && !(await profileNames(dir)).includes(profile))
    throw usageError(`there is no profile ${profile}`, `create it with targon config set --profile ${profile} <key> <value>`)
  return profile
}

/** The profile a config command reads or removes from: targetProfile, refused when the file does not hold it. */
export async function existingTargetProfile(settings: SettingsResolver): Promise<string> {
  return existingProfile(settings.dir, await targetProfile(settings))
}

/** The given settings of a profile (all by default), checked, masked, under their JSON names. */
export async function readValues(dir: string, profile: string, keys: readonly ConfigKey[] = CONFIG_KEYS): Promise<ConfigResult> {
  const values: Record<string, string | null> = {}
  for (const key of keys) {
    const stored = await readStoredValue(key, dir, profile)
    values[configJsonKey(key)] =
      stored === undefined || stored === null || stored === '' ? null : mask(key, String(parseStored(key, stored, dir)))
  }

  return {path: configFilePath(dir), profile, values}
}

/** Stores a setting; the result shows that setting only, so that a bad value elsewhere in the file cannot fail it. */
export async function setValue(dir: string, profile: string, key: ConfigKey, raw: string): Promise<ConfigResult> {
  const parsed = SETTINGS[key].parse(raw.trim(), key)
  // Numbers are kept as given once checked: a duration stored as its milliseconds would not read back as one.
  const value = typeof parsed === 'string' ? parsed : raw.trim()
  ensureConfigDir(dir)
  await writeStoredValue(dir, profile, key, value)
  return readValues(dir, profile, [key])
}

export async function unsetValue(dir: string, profile: string, key: ConfigKey): Promise<ConfigResult> {
  await writeStoredValue(dir, profile, key, undefined)
  return readValues(dir, profile, [key])
}
