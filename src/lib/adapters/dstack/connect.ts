/** The dstack server a profile names (dstack-url, dstack-project, dstack-token), or null when none is configured. */
import type {Clock} from '../../core/clock.js'
import {TargonError} from '../../core/errors.js'
import type {SettingsResolver} from '../settings/resolve.js'
import {DstackClient} from './client.js'

export interface DstackSettings {
  url: string
  project: string
  token: string
  /** dstack-host-pattern: one DNS name per VM; null: the VM's IP. */
  hostPattern: string | null
}

/** The profile's dstack settings; null when none is set; CONFIG when only some are. */
export async function dstackSettings(settings: SettingsResolver): Promise<DstackSettings | null> {
  const url = await settings.get('dstack-url')
  const project = await settings.get('dstack-project')
  const token = await settings.get('dstack-token')
  if (url === undefined && project === undefined && token === undefined) return null
  const missing = [url === undefined && 'dstack-url', project === undefined && 'dstack-project', token === undefined && 'dstack-token']
    .filter(Boolean)
    .join(', ')
  if (url === undefined || project === undefined || token === undefined)
    throw new TargonError('CONFIG', `dstack is half configured: ${missing} missing`, {
      hint: `set ${missing} (targon config set KEY, the token from stdin), or unset the others`,
    })
  return {hostPattern: (await settings.get('dstack-host-pattern')) ?? null, project, token, url}
}

export function dstackClient(
  dstack: DstackSettings,
  options: {clock: Clock; signal?: AbortSignal; requestTimeoutMs?: number; trace?: (line: string) => void},
): DstackClient {
  return new DstackClient({...options, project: dstack.project, token: dstack.token, url: dstack.url})
}
