/**
 * What "gone" and "billing" mean on Targon, decided in this one place for `down`, every
 * roll-back of `up`, and `status`.
 *
 * Targon's delete is soft: a DELETE of a running or provisioning workload answers 204, the
 * record shows `deleted` and often flips to `error` within about 30 s ("stopping container",
 * exit code 137). That `error` record is a tombstone: teardown is done and billing stopped, but
 * it stays listed for a while. A real crash also shows `error`, and keeps billing. The two look
 * alike, so the verdict comes from what this machine knows (a delete note: its DELETE was
 * accepted or refused), never from the message text.
 */
import type {DeleteNote} from '../../adapters/state/local-state.js'

/** A workload's status as the API reports it (lower case), or `not-found` for a 404. */
export type ObservedStatus = string

export interface Verdict {
  /** Deleted: a 404, a `deleted` record, or an `error` record after a DELETE that Targon accepted. */
  gone: boolean
  /** true: it costs money now; false: it does not; null: an `error` record nobody has classified yet. */
  billing: boolean | null
}

export function judge(status: ObservedStatus, note: DeleteNote | undefined): Verdict {
  if (status === 'not-found' || status === 'deleted') return {billing: false, gone: true}
  if (status === 'error') {
    if (note?.outcome === 'accepted') return {billing: false, gone: true}
    return {billing: note?.outcome === 'refused' ? true : null, gone: false}
  }

  // Never deployed. Whether Targon bills it is unknown; nothing suggests it does.
  if (status === 'registered') return {billing: false, gone: false}
  // provisioning, running, suspended (which bills), and any status this version does not know yet.
  return {billing: true, gone: false}
}

/**
 * Of several workloads that answer to one name, the ones a user means: a live VM before a tombstone (a name stays on
 * a tombstone after a new VM took it), and a deployed VM before a never-deployed registered workload (such as the
 * one the loser of an `up --name` race leaves when Targon refuses to delete it; it does not run).
 */
export function meantByName<T>(matches: T[], statusOf: (match: T) => ObservedStatus, goneOf: (match: T) => boolean): T[] {
  const rank = (match: T) => (goneOf(match) ? 2 : statusOf(match) === 'registered' ? 1 : 0)
  const best = Math.min(...matches.map(rank))
  return matches.filter((match) => rank(match) === best)
}

/** On the way somewhere (Targon's SDK lists them): a wait goes on through them. */
export const TRANSITIONAL: ReadonlySet<ObservedStatus> = new Set(['pending', 'powering_on', 'rebooting'])

/**
 * Halted or frozen (Targon's SDK lists them). They end a wait for running, except a wake-up's, and count as billing
 * until proven otherwise: a halted VM is not known to stop billing. down can still delete them, waking them first when
 * Targon refuses.
 */
export const HALTED: ReadonlySet<ObservedStatus> = new Set(['powering_off', 'stopped', 'frozen'])

/** Statuses whose DELETE Targon refuses with HTTP 500 until the workload runs again. */
export function needsWake(status: ObservedStatus): boolean {
  return status === 'suspended' || status === 'error' || HALTED.has(status)
}
