/**
 * Every setting the CLI reads, where it may come from, and how it is checked (the resolver is resolve.ts).
 * Precedence everywhere: flag > environment variable > config file > default.
 *
 * A bad value given as a flag is a usage error (exit 2); a bad value in the environment or in
 * the config file is a configuration error (exit 3) that names where it came from.
 */
import {DEFAULT_DSTACK_VERSION, validateDstackVersion} from './dstack-version.js'
import {TargonError, usageError} from '../../core/errors.js'
import {parseDuration, parsePrice, parseSize} from '../../core/input.js'
import {apiOrigin, dstackOrigin, secretUrl} from './urls.js'
import {validateHostPattern} from './host-pattern.js'

export const DEFAULT_FLEET = 'default'
const FLEET_PATTERN = /^[a-z0-9]{1,12}$/

export function validateFleet(fleet: string): string {
  if (!FLEET_PATTERN.test(fleet)) {
    throw usageError(`fleet "${fleet}" is not valid`, 'use 1-12 lowercase letters or digits, e.g. train')
  }

  return fleet
}

export const DEFAULT_IMAGE = 'ubuntu-24-04-lts-595'

/** An organization slug (the API's own rule). */
const ORG_SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/
/** An owner's name, as the owner setting takes it and as an owner project's name must carry it (fleet/owners.ts). */
export const OWNER_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/
/** Printable ASCII without spaces: anything else cannot travel in an HTTP header and would fail as a network error. */
const API_KEY = /^[\x21-\x7e]{8,}$/

export interface SettingSpec<T> {
  /** Kept in config.json and managed by `targon config`. */
  stored: boolean
  env?: string
  flag?: string
  default?: T
  /** Checks a raw value, throwing a one-line usage error that names `source` (a flag, a variable or a key). */
  parse: (raw: string, source: string) => T
}

const text =
  (pattern: RegExp, what: string, hint: string) =>
  (raw: string, source: string): string => {
    if (!pattern.test(raw)) throw usageError(`${source} "${raw}" is not ${what}`, hint)
    return raw
  }

/** Seconds from an environment variable, within [min, max], as ms. Refused, not clamped, so that a typo never changes a bound. */
const seconds =
  (min: number, max: number, example: number) =>
  (raw: string, source: string): number => {
    const value = Number(raw)
    if (!/^\d+(\.\d+)?$/.test(raw) || value < min || value > max)
      throw usageError(`${source} "${raw}" is not a number of seconds from ${min} to ${max}`, `set it to e.g. ${example}, or unset it`)
    return Math.round(value * 1000)
  }

/** A whole number of days from an environment variable, within [min, max]. */
const days =
  (min: number, max: number, example: number) =>
  (raw: string, source: string): number => {
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value < min || value > max)
      throw usageError(`${source} "${raw}" is not a whole number of days from ${min} to ${max}`, `set it to e.g. ${example}, or unset it`)
    return value
  }

export const SETTINGS = {
  // In the order `targon config list` shows the stored ones.
  'api-key': {
    env: 'TARGON_API_KEY',
    parse: (raw: string, source: string) => {
      // Never echo the value: it is a secret.
      if (!API_KEY.test(raw))
        throw usageError(
          `${source}: that API key looks wrong (too short, or with spaces, control or non-ASCII characters)`,
          'paste the whole key from targon.com, without quotes or line breaks',
        )
      return raw
    },
    stored: true,
  },
  org: {
    env: 'TARGON_ORG',
    flag: '--org',
    parse: text(ORG_SLUG, 'a valid slug', 'use lowercase letters, digits and hyphens, e.g. --org acme'),
    stored: true,
  },
  // Who this config directory rents for in a shared org (see fleet/owners.ts); never derived, only set.
  owner: {
    env: 'TARGON_OWNER',
    parse: text(OWNER_PATTERN, 'an owner name', 'use up to 32 lowercase letters, digits and hyphens, e.g. alice'),
    stored: true,
  },
  fleet: {default: DEFAULT_FLEET, flag: '--fleet', parse: (raw: string) => validateFleet(raw), stored: true},
  'max-price': {flag: '--max-price', parse: (raw: string, source: string) => parsePrice(raw, source), stored: true},
  image: {
    default: DEFAULT_IMAGE,
    flag: '--image',
    parse: text(/^[a-z0-9][a-z0-9._-]*$/, 'an image name', `use a name from the org's VM images, e.g. ${DEFAULT_IMAGE}`),
    stored: true,
  },
  'dstack-version': {
    default: DEFAULT_DSTACK_VERSION,
    flag: '--dstack-version',
    parse: (raw: string) => validateDstackVersion(raw),
    stored: true,
  },
  // A secret (a Slack webhook URL carries its token): never quoted back, masked by config list.
  'notify-url': {
    env: 'TARGON_NOTIFY_URL',
    flag: '--notify',
    parse: secretUrl('the webhook URL, e.g. https://hooks.slack.com/services/…'),
    stored: true,
  },
  // A secret too (a ping URL lets anyone mark the guard alive): the dead-man switch that targon sweep pings.
  'heartbeat-url': {
    env: 'TARGON_HEARTBEAT_URL',
    flag: '--heartbeat-url',
    parse: secretUrl('the ping URL of the check, e.g. https://hc-ping.com/<uuid>'),
    stored: true,
  },
  // The dstack server whose SSH fleets targon keeps in sync (targon dstack sync), per profile.
  'dstack-url': {env: 'TARGON_DSTACK_URL', parse: dstackOrigin, stored: true},
  'dstack-project': {
    env: 'TARGON_DSTACK_PROJECT',
    parse: text(/^[a-zA-Z0-9-_]{1,50}$/, 'a dstack project name', 'use the name dstack shows, e.g. main'),
    stored: true,
  },
  // A secret (the dstack user's token): read from stdin, never quoted back, masked by config list.
  'dstack-token': {
    env: 'TARGON_DSTACK_TOKEN',
    parse: (raw: string, source: string) => {
      if (!API_KEY.test(raw))
        throw usageError(
          `${source}: that dstack token looks wrong (too short, or with spaces, control or non-ASCII characters)`,
          'paste the token of dstack project get or the dstack UI, without quotes or line breaks',
        )
      return raw
    },
    stored: true,
  },
  // The name dstack reaches each VM by, when VMs share a public IP (dstack keys an SSH fleet's hosts by name).
  'dstack-host-pattern': {env: 'TARGON_DSTACK_HOST_PATTERN', parse: validateHostPattern, stored: true},
  // sweep --warn from the config file, so that the guard's crontab line or unit need not carry it.
  'warn-window': {parse: (raw: string) => parseDuration(raw, '--warn'), stored: true},
  // sweep --min-runway and --idle-limit from the config file, likewise: limits the guard enforces without a flag.
  'min-runway': {parse: (raw: string) => parseDuration(raw, '--min-runway'), stored: true},
  'idle-limit': {parse: (raw: string) => parseDuration(raw, '--idle-limit'), stored: true},
  // What a fetch of a job's outputs may write per job (run --out, jobs fetch and wait, the job store) before it stops.
  'job-store-limit': {
    default: 10 * 1024 ** 3,
    parse: (raw: string, source: string) => parseSize(raw, source, {max: 1024 ** 4, min: 1024 ** 2}),
    stored: true,
  },
  // Kept in the config file too, so that the guard's sweep (run by cron or systemd, with no environment) reaches the
  // same endpoint as the commands run by hand.
  'api-url': {default: 'https://api.targon.com', env: 'TARGON_API_URL', parse: apiOrigin, stored: true},
  'http-timeout': {default: 60_000, env: 'TARGON_HTTP_TIMEOUT', parse: seconds(1, 3600, 60), stored: false},
  'pull-retry-delay': {default: 5000, env: 'TARGON_PULL_RETRY_DELAY', parse: seconds(0, 600, 5), stored: false},
  'shim-health-timeout': {default: 60_000, env: 'TARGON_SHIM_HEALTH_TIMEOUT', parse: seconds(1, 3600, 60), stored: false},
  // How long a VM whose sshd does not answer (yet) is tried again before it is given up: a VM just booted answers
  // within seconds, one that is gone never does (exec, cp, jobs, run, extend, ssh, status, and down's hooks and probes).
  'ssh-connect-timeout': {default: 30_000, env: 'TARGON_SSH_CONNECT_TIMEOUT', parse: seconds(1, 3600, 30), stored: false},
  // How long one request to dstack may hold up a deletion that takes VMs out of its fleet (down, sweep, jobs wait
  // --down), never longer than http-timeout: a dstack that hangs is a warning, and the deletion goes ahead. A value out
  // of range is a warning there too, and this default holds (workflows/dstack/leave.ts).
  'dstack-leave-timeout': {default: 15_000, env: 'TARGON_DSTACK_LEAVE_TIMEOUT', parse: seconds(1, 3600, 15), stored: false},
  // The floor between two inventory reads of up --wait; lower only against a simulator, not against Targon.
  'capacity-poll-interval': {default: 15_000, env: 'TARGON_CAPACITY_POLL_INTERVAL', parse: seconds(0.1, 3600, 15), stored: false},
  'state-watch-interval': {default: 5000, env: 'TARGON_STATE_WATCH_INTERVAL', parse: seconds(0.1, 600, 5), stored: false},
  // How often the idle sampler on a VM samples activity (set at up; seconds in the environment, for tests).
  'idle-sample-interval': {default: 60_000, env: 'TARGON_IDLE_SAMPLE_INTERVAL', parse: seconds(1, 3600, 60), stored: false},
  // How long a mutation with an unclear answer is reconciled (the listing or the state watched) before it is sent
  // again: a create's listing is watched this long, a DELETE answered 5xx a third of it. Lower only for a simulator.
  'reconcile-window': {default: 30_000, env: 'TARGON_RECONCILE_WINDOW', parse: seconds(0.1, 600, 30), stored: false},
  // How long the spend ledger keeps a month: whole months that ended longer ago are deleted by targon cost.
  'ledger-days': {default: 400, env: 'TARGON_LEDGER_DAYS', parse: days(1, 36_500, 400), stored: false},
} satisfies Record<string, SettingSpec<unknown>>

export type SettingKey = keyof typeof SETTINGS
type Spec<K extends SettingKey> = (typeof SETTINGS)[K]
export type SettingValue<K extends SettingKey> = ReturnType<Spec<K>['parse']>
export type WithDefault = {[K in SettingKey]: Spec<K> extends {default: unknown} ? K : never}[SettingKey]

/** Keys a user may keep in the config file (`targon config set KEY VALUE`). */
export {CONFIG_KEYS} from './config-keys.js'
export type ConfigKey = {[K in SettingKey]: Spec<K>['stored'] extends true ? K : never}[SettingKey]

/**
 * A parse error as CONFIG. A value read from the config file is never quoted back (`hidden`): a key pasted into the
 * wrong field is still the key, and these messages end up in cron logs.
 */
export function asConfigError<T>(parse: () => T, where?: string, hint?: string, hidden?: string): T {
  try {
    return parse()
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    const message = hidden ? error.message.replaceAll(` "${hidden}"`, '').replaceAll(hidden, '…') : error.message
    throw new TargonError('CONFIG', where ? `${where}: ${message}` : message, {hint: hint ?? error.hint})
  }
}
