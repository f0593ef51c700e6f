/**
 * What one run of a command carries to its workflow, resolved once by the command's base: its settings (bound to the
 * run's environment, --profile and config directory), its clock, the stream of its events, where a warning goes, and
 * the signal a first interrupt aborts, and its ration of workload-history reads. Workflows take this value instead of reaching for process-wide state.
 */
import type {Clock} from '../core/clock.js'
import type {HistoryBudget} from '../deletion/history.js'
import type {SettingsResolver} from '../settings/resolve.js'
import type {RunEvents} from './run-events.js'

export interface RunContext {
  readonly settings: SettingsResolver
  readonly clock: Clock
  readonly events: RunEvents
  /** A warning of the run: on stderr in human mode, in the JSON envelope, and as an event. */
  readonly warn: (message: string) => void
  /** Aborted by the first interrupt of a run that guards its interrupts; never aborted otherwise. */
  readonly signal: AbortSignal
  /** The history reads left to this run, spent by every listing it makes (deletion/history.ts). */
  readonly historyBudget: HistoryBudget
}

/** What a workflow that lists the fleet reads of its run: the time, where warnings go, and the history reads left. */
export type ListingRun = Pick<RunContext, 'clock' | 'historyBudget' | 'warn'>

/** What a workflow over many VMs (exec, cp) reads of its run: a listing's, and the events that announce each VM. */
export type FanOutRun = Pick<RunContext, 'clock' | 'events' | 'historyBudget' | 'warn'>
