/**
 * `targon config`: validated user settings in the 0600 config file (conf). The API key is
 * read from stdin or a hidden prompt, never from argv, and never printed unmasked.
 */
import * as z from 'zod'

import {validateDstackVersion} from './bootstrap/runner.js'
import {usageError} from './errors.js'
import {validateFleet} from './fleet.js'
import {ORG_SLUG} from './org.js'
import {parsePrice} from './parse.js'
import {CONFIG_KEYS, type ConfigKey, configFilePath, ensureConfigDir, openConfig} from './settings.js'

export const ConfigResultSchema = z.object({
  path: z.string(),
  values: z.record(z.string(), z.string().nullable()).describe('api-key is masked'),
})
export type ConfigResult = z.infer<typeof ConfigResultSchema>

const VALIDATORS: Record<ConfigKey, (value: string) => string> = {
  'api-key': (value) => {
    if (!/^\S{8,}$/.test(value)) throw usageError('that API key looks wrong (empty, too short or with spaces)', 'paste the whole key from targon.com')
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

export function mask(key: ConfigKey, value: string | undefined): string | null {
  if (value === undefined) return null
  return key === 'api-key' ? `${'*'.repeat(8)}${value.slice(-4)}` : value
}

export async function readValues(dir: string): Promise<ConfigResult> {
  const config = await openConfig(dir)
  const values: Record<string, string | null> = {}
  for (const key of CONFIG_KEYS) values[key] = mask(key, config.get(key))
  return {path: configFilePath(dir), values}
}

export async function setValue(dir: string, key: ConfigKey, raw: string): Promise<ConfigResult> {
  const value = VALIDATORS[key](raw.trim())
  ensureConfigDir(dir)
  const config = await openConfig(dir)
  config.set(key, value)
  return readValues(dir)
}

export async function unsetValue(dir: string, key: ConfigKey): Promise<ConfigResult> {
  const config = await openConfig(dir)
  config.delete(key)
  return readValues(dir)
}
