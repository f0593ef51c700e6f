/**
 * Whether a guard on this machine covers a config directory and profile, and how its sweeps went: what status shows
 * in one line, and what up checks before saying that nothing enforces a limit yet. Reading it is optional: a crontab
 * or file that cannot be read makes the coverage unknown and a warning, never a failure of up or status.
 */
import type {GuardCoverage} from './schema.js'
import {asTargonError} from '../../core/errors.js'
import {formatDuration} from '../../core/input.js'
import {installedGuards} from './entries.js'
import {sameGuard} from './installed.js'
import {readPasses} from './passes.js'

export function guardCoverage(configDir: string, profile: string, warn: (message: string) => void): GuardCoverage {
  try {
    const guard = installedGuards().find((each) => sameGuard(each.marker, {configDir, profile}))
    const last = readPasses(configDir, profile).at(-1)
    return {
      every_seconds: guard?.everyMs == null ? null : guard.everyMs / 1000,
      kind: guard?.kind ?? null,
      last_exit_code: last?.exit_code ?? null,
      last_run_at: last?.at ?? null,
    }
  } catch (error) {
    warn(`whether a guard covers this config directory is unknown: ${asTargonError(error).message}`)
    return {every_seconds: null, kind: 'unknown', last_exit_code: null, last_run_at: null}
  }
}

/** The line status prints. */
export function coverageLine(guard: GuardCoverage, now: number): string {
  if (guard.kind === null)
    return 'No guard on this machine enforces the limits of this directory: targon guard install --cron here, or targon guard install --team on an always-on machine'
  if (guard.kind === 'unknown') return 'Guard: unknown (it could not be read; see the warning)'
  const every = guard.every_seconds === null ? '' : ` every ${formatDuration(guard.every_seconds * 1000)}`
  const last =
    guard.last_run_at === null
      ? 'no run yet'
      : `last run ${formatDuration(Math.max(0, now - Date.parse(guard.last_run_at)))} ago (exit ${guard.last_exit_code})`
  return `Guard: ${guard.kind}${every}, ${last}`
}
