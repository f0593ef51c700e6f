/**
 * The settings `targon up` reads besides its price cap, each only when the flags need it: a bad value of a setting the
 * run does not use (TARGON_DSTACK_VERSION with --no-bootstrap, say) must not fail it.
 */
import type {SettingsResolver} from '../../adapters/settings/resolve.js'

/** The settings of the bootstrap, read only with it. */
export interface UpBootstrapSettings {
  dstackVersion: string
  pullRetryDelayMs: number
  shimHealthTimeoutMs: number
  stateWatchIntervalMs: number
  idleSampleIntervalMs: number
}

/** What up reads of its settings, resolved: the flag's value where one was given. */
export interface UpSettingValues {
  /** The price cap; null when none is set (then only adopting by --name is allowed). */
  maxPrice: number | null
  fleet: string
  image: string
  owner: string | null
  /** Read only with the bootstrap (--bootstrap, the default). */
  bootstrap?: UpBootstrapSettings
  /** The floor between two inventory reads, read only with --wait. */
  capacityPollIntervalMs?: number
}

/** The flags that name a setting, or decide whether one is read. */
export interface UpSettingFlags {
  bootstrap: boolean
  'dstack-version'?: string
  fleet?: string
  image?: string
  wait?: number
}

/** Every setting up reads but the price cap (read first, on its own), in the order up has always read them. */
export async function readUpSettings(settings: SettingsResolver, flags: UpSettingFlags): Promise<Omit<UpSettingValues, 'maxPrice'>> {
  const fleet = await settings.get('fleet', flags.fleet)
  const image = await settings.get('image', flags.image)
  const bootstrap = flags.bootstrap
    ? {
        dstackVersion: await settings.get('dstack-version', flags['dstack-version']),
        pullRetryDelayMs: await settings.get('pull-retry-delay'),
        shimHealthTimeoutMs: await settings.get('shim-health-timeout'),
        stateWatchIntervalMs: await settings.get('state-watch-interval'),
        idleSampleIntervalMs: await settings.get('idle-sample-interval'),
      }
    : undefined
  const capacityPollIntervalMs = flags.wait === undefined ? undefined : await settings.get('capacity-poll-interval')
  const owner = (await settings.get('owner')) ?? null
  return {bootstrap, capacityPollIntervalMs, fleet, image, owner}
}
