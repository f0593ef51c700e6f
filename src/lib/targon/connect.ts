/** Builds a TargonClient from the settings (origin, key, timeouts). */
import type {Clock} from '../core/clock.js'
import {TargonError} from '../core/errors.js'
import {DEFAULT_PROFILE, activeProfile, configDir, configFilePath, readStoredValue, resolveSetting} from '../settings/settings.js'
import {TargonClient} from './client.js'

export interface ConnectOptions {
  /** Whether the calls need the API key (the inventory does not). */
  auth: boolean
  signal?: AbortSignal
  trace?: (line: string) => void
  /** The time retries sleep on and exchanges are timed with. */
  clock: Clock
}

export async function connect(options: ConnectOptions): Promise<TargonClient> {
  return new TargonClient({
    baseUrl: await resolveSetting('api-url'),
    clock: options.clock,
    requestTimeoutMs: await resolveSetting('http-timeout'),
    signal: options.signal,
    token: options.auth ? await apiKey() : undefined,
    tokenSource: options.auth ? await apiKeySource() : undefined,
    trace: options.trace,
  })
}

/** Where the key came from, as resolveSetting decides: a named profile's key, else TARGON_API_KEY, else the profile's. */
async function apiKeySource(): Promise<string> {
  const profile = await activeProfile()
  const inFile = `the api-key${profile.name === DEFAULT_PROFILE ? '' : ` of profile ${profile.name}`} in ${configFilePath()}`
  const named = profile.source === 'flag' || profile.source === 'env'
  if (named && (await readStoredValue('api-key', configDir(), profile.name)) !== undefined) return inFile
  return process.env.TARGON_API_KEY?.trim() ? 'TARGON_API_KEY' : inFile
}

async function apiKey(): Promise<string> {
  const key = await resolveSetting('api-key')
  if (key === undefined)
    throw new TargonError('AUTH', 'no Targon API key is configured', {
      hint: 'export TARGON_API_KEY=<key>, or store it with: targon config set api-key',
    })
  return key
}
