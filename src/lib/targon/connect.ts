/** Builds a TargonClient from the environment and config (origin, key, timeouts). */
import {resolveApiKey} from '../settings/config-file.js'
import {apiOrigin, httpTimeoutMs} from '../settings/settings.js'
import {TargonClient} from './client.js'

export interface ConnectOptions {
  /** Whether the calls need the API key (the inventory does not). */
  auth: boolean
  signal?: AbortSignal
  trace?: (line: string) => void
}

export async function connect(options: ConnectOptions): Promise<TargonClient> {
  return new TargonClient({
    baseUrl: apiOrigin(),
    requestTimeoutMs: httpTimeoutMs(),
    signal: options.signal,
    token: options.auth ? await resolveApiKey() : undefined,
    trace: options.trace,
  })
}
