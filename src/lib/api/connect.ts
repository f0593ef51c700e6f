/** Builds a TargonClient from the environment and config (origin, key, timeouts). */
import {TargonError} from '../errors.js'
import {apiOrigin, resolveApiKey} from '../settings.js'
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
    requestTimeoutMs: requestTimeoutMs(),
    signal: options.signal,
    token: options.auth ? await resolveApiKey() : undefined,
    trace: options.trace,
  })
}

/** TARGON_HTTP_TIMEOUT: the whole-request deadline in seconds (default 60). */
function requestTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.TARGON_HTTP_TIMEOUT
  if (raw === undefined || raw === '') return 60_000
  const seconds = Number(raw)
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new TargonError('CONFIG', `TARGON_HTTP_TIMEOUT "${raw}" is not a number of seconds`, {hint: 'set it to e.g. 60, or unset it'})
  }

  return Math.round(seconds * 1000)
}
