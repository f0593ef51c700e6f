/** The dstack server of the run's profile, connected; null when none is configured. The caller closes it. */
import {type DstackClient} from '../../adapters/dstack/client.js'
import {type DstackSettings, dstackClient, dstackSettings} from '../../adapters/dstack/connect.js'
import type {RunContext} from '../run-context.js'

export interface DstackHandle {
  client: DstackClient
  settings: DstackSettings
}

export async function openDstack(
  run: Pick<RunContext, 'clock' | 'settings'>,
  options: {signal?: AbortSignal; trace?: (line: string) => void; maxRequestMs?: () => Promise<number>} = {},
): Promise<DstackHandle | null> {
  const settings = await dstackSettings(run.settings)
  if (settings === null) return null
  const {maxRequestMs, ...rest} = options
  // Asked only once a dstack server is configured: a budget of its own is no concern of a run without one.
  const requestTimeoutMs = Math.min(await run.settings.get('http-timeout'), (await maxRequestMs?.()) ?? Number.POSITIVE_INFINITY)
  return {client: dstackClient(settings, {clock: run.clock, requestTimeoutMs, ...rest}), settings}
}
