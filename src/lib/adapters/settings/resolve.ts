/**
 * The settings resolver: one object per run, bound to the run's environment, its --profile and its config
 * directory. Precedence everywhere: flag > environment variable > config file > default. The config file is read
 * only when neither a flag nor the environment gives the value. This is the one place that reads the environment
 * for settings (see eslint.config.js).
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import {TargonError} from '../../core/errors.js'
import {type ActiveProfile, activeProfile} from './profiles.js'
import {configFilePath, readStoredValue} from './store.js'
import {type ConfigKey, SETTINGS, type SettingKey, type SettingSpec, type SettingValue, type WithDefault, asConfigError} from './table.js'

/** What a resolver is bound to. */
export interface SettingsInputs {
  env: NodeJS.ProcessEnv
  /** The run's --profile (every command takes it). */
  profileFlag?: string
}

/** What a profile named for the run decides over the environment (see get). */
const PROFILE_DECIDES: readonly SettingKey[] = ['api-key', 'org', 'api-url']

export class SettingsResolver {
  /** The config directory: TARGON_CONFIG_DIR, else targon-fleet under XDG_CONFIG_HOME or ~/.config. */
  readonly dir: string
  /** The config directory without TARGON_CONFIG_DIR: the one a run that does not set it uses. */
  readonly defaultDir: string
  readonly profileFlag: string | undefined
  private readonly env: NodeJS.ProcessEnv
  private chosenProfile: Promise<ActiveProfile> | undefined

  constructor({env, profileFlag}: SettingsInputs) {
    this.env = env
    this.profileFlag = profileFlag
    this.dir = configDir(env)
    this.defaultDir = configDir({...env, TARGON_CONFIG_DIR: undefined})
  }

  /** A setting by precedence: the flag's value if given, else the environment, else the config file, else the default. */
  get<K extends WithDefault>(key: K, flag?: string): Promise<SettingValue<K>>
  get<K extends SettingKey>(key: K, flag?: string): Promise<SettingValue<K> | undefined>
  async get<K extends SettingKey>(key: K, flag?: string): Promise<SettingValue<K> | undefined> {
    const spec: SettingSpec<SettingValue<K>> = SETTINGS[key] as SettingSpec<SettingValue<K>>
    if (flag !== undefined && spec.flag) return spec.parse(flag.trim(), spec.flag)
    const raw = this.fromEnvironment(key)
    const fromEnv = spec.env && raw ? asConfigError(() => spec.parse(raw, spec.env as string)) : undefined
    if (!spec.stored) return fromEnv ?? spec.default
    const profile = await this.profile()
    const storedRaw = await readStoredValue(key as ConfigKey, this.dir, profile.name)
    const stored =
      storedRaw === undefined || storedRaw === null || storedRaw === ''
        ? undefined
        : parseStored(key as ConfigKey, storedRaw, this.dir, spec)
    // A profile named for this run (--profile, TARGON_PROFILE) decides the key, the org and the API URL over the
    // environment (its key goes to its endpoint only); a key of the environment that differs from the profile's is
    // refused: one of the two is the wrong account.
    if (profile.source !== 'default' && profile.source !== 'config' && PROFILE_DECIDES.includes(key) && stored !== undefined) {
      if (key === 'api-key' && fromEnv !== undefined && fromEnv !== stored)
        throw new TargonError('CONFIG', `TARGON_API_KEY differs from the api-key of profile ${profile.name} (chosen by ${profile.by})`, {
          hint: `unset TARGON_API_KEY to use the profile's key, or drop ${profile.by} to use the environment's`,
        })
      return stored
    }

    return fromEnv ?? stored ?? spec.default
  }

  /** The raw value the environment gives a setting (trimmed; undefined when unset, empty or not read from there). */
  fromEnvironment(key: SettingKey): string | undefined {
    const spec: SettingSpec<unknown> = SETTINGS[key]
    return (spec.env ? this.env[spec.env]?.trim() : undefined) || undefined
  }

  /** TARGON_PROFILE, trimmed; undefined when unset or empty. */
  profileFromEnvironment(): string | undefined {
    return this.env.TARGON_PROFILE?.trim() || undefined
  }

  /** The user who ran sudo (SUDO_USER), when this uid is theirs (SUDO_UID); undefined otherwise, or without sudo. */
  sudoUser(uid: number): string | undefined {
    return this.env.SUDO_UID === String(uid) ? this.env.SUDO_USER : undefined
  }

  /** The same settings as a run without --profile reads them. */
  withoutProfileFlag(): SettingsResolver {
    return new SettingsResolver({env: this.env})
  }

  /** The profile the run reads its stored settings from (see profiles.ts), resolved on first use and then kept. */
  profile(): Promise<ActiveProfile> {
    this.chosenProfile ??= activeProfile({
      dir: this.dir,
      envApiKey: this.fromEnvironment('api-key') !== undefined,
      envProfile: this.profileFromEnvironment(),
      flag: this.profileFlag,
    })
    return this.chosenProfile
  }
}

/** A resolver of this process's environment. */
export function processSettings(profileFlag?: string): SettingsResolver {
  return new SettingsResolver({env: process.env, profileFlag})
}

/** The config directory that this environment names (an empty one gives the default). */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.TARGON_CONFIG_DIR) return env.TARGON_CONFIG_DIR
  const xdg = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(xdg, 'targon-fleet')
}

/** A value from the config file, checked as `config set` would; a number is accepted where a number is meant. */
export function parseStored<T>(key: ConfigKey, stored: unknown, dir: string, spec: SettingSpec<T> = SETTINGS[key] as SettingSpec<T>): T {
  const where = `config file ${configFilePath(dir)}: ${key}`
  const hint = key === 'api-key' ? 'run targon config set api-key' : `run targon config set ${key} <value>, or targon config unset ${key}`
  const raw = typeof stored === 'number' && key === 'max-price' ? String(stored) : stored
  if (typeof raw !== 'string')
    throw new TargonError('CONFIG', `${where} must be a string, not ${Array.isArray(raw) ? 'an array' : typeof raw}`, {hint})
  return asConfigError(() => spec.parse(raw, key), where, hint, raw)
}
