/** Which profile of the config file a run reads its settings from, and what chose it. */
import {TargonError} from '../../core/errors.js'
import {asConfigError} from './table.js'
import {DEFAULT_PROFILE, checkProfileName, configuredProfile, profileNames} from './store.js'

/** The profile a run reads its settings from, and what chose it. */
export interface ActiveProfile {
  name: string
  source: 'config' | 'default' | 'env' | 'flag'
  /** As a person reads it: --profile, TARGON_PROFILE, "targon config use", or "the default". */
  by: string
}

/** What a run's profile is chosen from: its --profile, its environment, and the config directory's file. */
export interface ProfileInputs {
  dir: string
  /** TARGON_PROFILE, trimmed (empty: unset). */
  envProfile: string | undefined
  /** Whether TARGON_API_KEY is set. */
  envApiKey: boolean
  flag: string | undefined
}

/**
 * --profile, then TARGON_PROFILE, then the `config use` choice, then the default profile (the top-level keys). A run
 * that takes its key from TARGON_API_KEY and names no profile keeps the default profile whatever `config use` says:
 * a cron line acts where it did before.
 */
export async function activeProfile({dir, envApiKey, envProfile, flag}: ProfileInputs): Promise<ActiveProfile> {
  const named =
    flag !== undefined
      ? {by: '--profile', name: checkProfileName(flag, '--profile'), source: 'flag' as const}
      : envProfile
        ? {by: 'TARGON_PROFILE', name: asConfigError(() => checkProfileName(envProfile, 'TARGON_PROFILE')), source: 'env' as const}
        : undefined
  if (named) {
    if (named.name !== DEFAULT_PROFILE && !(await profileNames(dir)).includes(named.name))
      throw new TargonError('CONFIG', `there is no profile ${named.name} (named by ${named.by})`, {
        hint: `create it with targon config set --profile ${named.name} api-key, or see targon config list`,
      })
    return named
  }

  const chosen = await configuredProfile(dir)
  if (chosen && envApiKey)
    return {by: 'the default, as TARGON_API_KEY is set and names no profile', name: DEFAULT_PROFILE, source: 'default'}
  return chosen ? {by: 'targon config use', name: chosen, source: 'config'} : {by: 'the default', name: DEFAULT_PROFILE, source: 'default'}
}
