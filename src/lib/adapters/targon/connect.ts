/** Builds a TargonClient from the settings (origin, key, timeouts). */
import type {Clock} from '../../core/clock.js'
import {TargonError} from '../../core/errors.js'
import type {SettingsResolver} from '../settings/resolve.js'
import {DEFAULT_PROFILE, configFilePath, readStoredValue} from '../settings/store.js'
import {TargonClient} from './client.js'

export interface ConnectOptions {
  /** Whether the calls need the API key (the inventory does not). */
  auth: boolean
  signal?: AbortSignal
  trace?: (line: string) => void
  /** The time retries sleep on and exchanges are timed with. */
  clock: Clock
}

export async function connect(settings: SettingsResolver, options: ConnectOptions): Promise<TargonClient> {
  return new TargonClient({
    baseUrl: await settings.get('api-url'),
    clock: options.clock,
    requestTimeoutMs: await settings.get('http-timeout'),
    signal: options.signal,
    token: options.auth ? await apiKey(settings) : undefined,
    tokenSource: options.auth ? await apiKeySource(settings) : undefined,
    trace: options.trace,
  })
}

/** Where the key came from, as the settings resolver decides: a named profile's key, else TARGON_API_KEY, else the profile's. */
async function apiKeySource(settings: SettingsResolver): Promise<string> {
  const profile = await settings.profile()
  const inFile = `the api-key${profile.name === DEFAULT_PROFILE ? '' : ` of profile ${profile.name}`} in ${configFilePath(settings.dir)}`
  const named = profile.source === 'flag' || profile.source === 'env'
  if (named && (await readStoredValue('api-key', settings.dir, profile.name)) !== undefined) return inFile
  return settings.fromEnvironment('api-key') !== undefined ? 'TARGON_API_KEY' : inFile
}

async function apiKey(settings: SettingsResolver): Promise<string> {
  const key = await settings.get('api-key')
  if (key === undefined)
    throw new TargonError('AUTH', 'no Targon API key is configured', {
      hint: 'export TARGON_API_KEY=<key>, or store it with: targon config set api-key',
    })
  return key
}
