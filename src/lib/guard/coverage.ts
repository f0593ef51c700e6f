/**
 * Whether a guard on this machine covers a config directory and profile, and how its sweeps went: what status shows
 * in one line, and what up checks before saying that nothing enforces a limit yet.
 */
import type {StatusResult} from '../contract.js'
import {formatDuration} from '../core/input.js'
import {installedGuards} from './entries.js'
import {sameGuard} from './installed.js'
import {readRuns} from './runs.js'

export function guardCoverage(configDir: string, profile: string): StatusResult['guard'] {
  const guard = installedGuards().find((each) => sameGuard(each.marker, {configDir, profile}))
  const last = readRuns(configDir, profile).at(-1)
  return {
    every_seconds: guard?.everyMs == null ? null : guard.everyMs / 1000,
    kind: guard?.kind ?? null,
    last_exit_code: last?.exit_code ?? null,
    last_run_at: last?.at ?? null,
  }
}

/** The line status prints. */
export function coverageLine(guard: StatusResult['guard'], now: number): string {
  if (guard.kind === null) return 'No guard on this machine enforces the limits of this directory: targon guard install --cron'
  const every = guard.every_seconds === null ? '' : ` every ${formatDuration(guard.every_seconds * 1000)}`
  const last =
    guard.last_run_at === null
      ? 'no run yet'
      : `last run ${formatDuration(Math.max(0, now - Date.parse(guard.last_run_at)))} ago (exit ${guard.last_exit_code})`
  return `Guard: ${guard.kind}${every}, ${last}`
}
