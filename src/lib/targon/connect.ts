/** Builds a TargonClient from the settings (origin, key, timeouts). */
import {TargonError} from '../shell/errors.js'
import {configFilePath, resolveSetting} from '../settings/settings.js'
import {TargonClient} from './client.js'

export interface ConnectOptions {
  /** Whether the calls need the API key (the inventory does not). */
  auth: boolean
  signal?: AbortSignal
  trace?: (line: string) => void
}

export async function connect(options: ConnectOptions): Promise<TargonClient> {
  return new TargonClient({
    baseUrl: await resolveSetting('api-url'),
    requestTimeoutMs: await resolveSetting('http-timeout'),
    signal: options.signal,
    token: options.auth ? await apiKey() : undefined,
    // As resolveSetting decides: the environment wins over the config file.
    tokenSource: process.env.TARGON_API_KEY?.trim() ? 'TARGON_API_KEY' : `the api-key in ${configFilePath()}`,
    trace: options.trace,
  })
}

async function apiKey(): Promise<string> {
  const key = await resolveSetting('api-key')
  if (key === undefined)
    throw new TargonError('AUTH', 'no Targon API key is configured', {
      hint: 'export TARGON_API_KEY=<key>, or store it with: targon config set api-key',
    })
  return key
}
