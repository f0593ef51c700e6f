/**
 * A targon command that a run prints for the user to paste later (extend a VM, follow a job): complete with what this
 * run used that a later shell may not have, the config directory when it is not the default, the fleet when it is
 * not `default`, and the profile when it is not `default`. Every word from outside is shell-quoted; nothing secret is
 * in it.
 */
import {configDir} from '../adapters/settings/resolve.js'
import {DEFAULT_PROFILE} from '../adapters/settings/store.js'
import {shellQuote} from '../adapters/ssh/session.js'

/** Where a run was made, as a later command must repeat it. */
export interface RunPlace {
  configDir: string
  profile: string
  /** The fleet, for commands that select by it (jobs); absent where none applies. */
  fleet?: string
}

/** `words` (already shell words) as a command line, with the place's config directory, fleet and profile, then `extra`. */
export function laterCommand(words: string[], place: RunPlace, extra: string[] = []): string {
  return [
    ...(place.configDir === configDir({}) ? [] : [`TARGON_CONFIG_DIR=${shellWord(place.configDir)}`]),
    'targon',
    ...words,
    ...(place.fleet === undefined || place.fleet === 'default' ? [] : [`--fleet ${shellWord(place.fleet)}`]),
    ...(place.profile === DEFAULT_PROFILE ? [] : [`--profile ${shellWord(place.profile)}`]),
    ...extra,
  ].join(' ')
}

/** A word as a POSIX shell reads it back: bare when it holds nothing the shell treats specially, else quoted. */
export function shellWord(value: string): string {
  return /^[\w./:@%+,=-]+$/.test(value) ? value : shellQuote(value)
}
