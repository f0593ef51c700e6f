/**
 * What one run of a command carries to its workflow, resolved once by the command's base: its settings (bound to the
 * run's environment, --profile and config directory), its clock, the stream of its events, where a warning goes, and
 * the signal a first interrupt aborts, and its ration of workload-history reads. Workflows take this value instead of reaching for process-wide state.
 */
import type {SettingsResolver} from '../adapters/settings/resolve.js'
import type {FanOutRun, ListingRun} from '../domain/fleet/run.js'

export interface RunContext extends FanOutRun {
  readonly settings: SettingsResolver
  /** Aborted by the first interrupt of a run that guards its interrupts; never aborted otherwise. */
  readonly signal: AbortSignal
}

/**
 * What a workflow that deletes (down, sweep, run --down) reads of its run: a listing's parts, and the signal after
 * which no further deletion starts (those under way finish).
 */
export type DeletionRun = ListingRun & Pick<RunContext, 'signal'>
