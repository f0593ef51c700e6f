/**
 * What a workflow that reads the fleet needs of its run, below the run context that carries it: the domain reads the
 * fleet for every workflow, so these parts of the run are named here, and the run context (workflows/run-context.ts)
 * is made of them.
 */
import type {Clock} from '../../core/clock.js'
import type {RunEvents} from '../../adapters/events/run-events.js'
import type {HistoryBudget} from '../deletion/history.js'

/** What a workflow that lists the fleet reads of its run: the time, where warnings go, and the history reads left. */
export interface ListingRun {
  readonly clock: Clock
  /** A warning of the run: on stderr in human mode, in the JSON envelope, and as an event. */
  readonly warn: (message: string) => void
  /** The history reads left to this run, spent by every listing it makes (deletion/history.ts). */
  readonly historyBudget: HistoryBudget
}

/** What a workflow over many VMs (exec, cp) reads of its run: a listing's, and the events that announce each VM. */
export interface FanOutRun extends ListingRun {
  readonly events: RunEvents
}
