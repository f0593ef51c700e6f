/**
 * What the rest of the tool tells the spend ledger, in three calls: a deploy accepted (a start), a deletion
 * confirmed (a stop), and a listing seen (the starts of VMs found billing, sightings, and the ends of VMs found gone).
 * Each returns a warning instead of failing: a ledger that cannot be written must never stop an `up` or a `down`.
 */
import type {Clock} from '../../core/clock.js'
import {type Listing, intervalsOf, linesFromListing} from './intervals.js'
import type {LedgerLine} from './lines.js'
import type {VmFacts} from './schema.js'
import {LedgerStore} from './store.js'
import type {LocalState} from '../../adapters/state/local-state.js'

/** A VM whose billing began: which, what it is, and why it began (see recordStart). */
export interface StartedVm {
  uid: string
  facts: VmFacts
  source: 'api-created' | 'deploy' | 'wake-registered'
  /** For `api-created`: the API's created_at (a missing or future one makes it `first-seen`, now). Otherwise now. */
  createdAt?: string | null
}

/**
 * Billing of a VM began: its deploy was accepted (by `up`, or by `down --wake-registered` to delete it), or, for
 * `api-created`, a DELETE refused proved that a VM nobody here knew of bills (a crash), since its creation.
 */
export function recordStart(configDir: string, org: string, vm: StartedVm, now: number): string | undefined {
  const {createdAt: at, facts, source, uid} = vm
  const began = source === 'api-created' && at && Date.parse(at) <= now ? at : null
  const recorded = new Date(now).toISOString()
  return guarded(() =>
    new LedgerStore(configDir, org).append(
      [
        {
          ...facts,
          at: began ?? recorded,
          kind: 'start',
          recorded_at: recorded,
          source: began || source !== 'api-created' ? source : 'first-seen',
          uid,
        },
      ],
      now,
    ),
  )
}

/** Billing of `uid` is confirmed to have stopped now: this run's deletion of it was confirmed. */
export function recordStop(configDir: string, org: string, uid: string, now: number): string | undefined {
  const at = new Date(now).toISOString()
  return guarded(() => new LedgerStore(configDir, org).append([{at, how: 'deleted', kind: 'stop', recorded_at: at, uid}], now))
}

/**
 * What a listing of the org's VMs tells the ledger; a warning when it could not be written. (What could not be read
 * is said by the reports that read it, not by every command that lists.)
 */
export function recordListing(configDir: string, org: string, listing: Listing, now: number, everySighting = false): string | undefined {
  return guarded(() => {
    const store = new LedgerStore(configDir, org)
    // The latest file holds every open interval (see store.ts): the rest of the ledger cannot change what a listing adds.
    return store.append(linesFromListing(intervalsOf(store.readLatest().lines), listing, now, everySighting), now)
  })
}

/** Ends the server's history gave VMs that ended out of sight (intervals.ts historyStop); a warning when not written. */
export function recordHistoryStops(configDir: string, org: string, stops: LedgerLine[], now: number): string | undefined {
  return stops.length === 0 ? undefined : guarded(() => new LedgerStore(configDir, org).append(stops, now))
}

/**
 * Records what a fleet read saw: its listing in the spend ledger (FleetView.listing; a failed write becomes one
 * more of its problems, said like the listing's own), and drops the history verdicts it outdated
 * (FleetView.staleVerdicts). The fleet read itself only reads: every workflow that lists calls this after it.
 * `everySighting`: see linesFromListing (a cost report).
 */
export function recordFleetRead(
  state: LocalState,
  org: string,
  view: {listing: Listing; problems: string[]; staleVerdicts: readonly string[]},
  clock: Pick<Clock, 'now'>,
  everySighting = false,
): void {
  state.dropHistoryVerdicts(org, view.staleVerdicts)
  const unrecorded = recordListing(state.dir, org, view.listing, clock.now(), everySighting)
  if (unrecorded) view.problems.push(unrecorded)
}

function guarded(write: () => string | undefined): string | undefined {
  try {
    return write()
  } catch (error) {
    return `could not record spend: ${(error as Error).message}`
  }
}
