/**
 * Waiting on the API. A wait (for running, for SSH, for a deletion to show) ends only when its
 * check says so, on a real terminal state that the check throws, or at its deadline: what a busy
 * API answers in between (429 with or without Retry-After, 5xx, resets, lost answers) only makes
 * it back off.
 */
import {type PollOptions, poll} from './poll.js'

import {TargonError} from './errors.js'

/** A failure that says nothing about the workload: the same request may well succeed later. */
export function isTransient(error: unknown): boolean {
  if (!(error instanceof TargonError)) return false
  if (error.code === 'NETWORK_ERROR' || error.code === 'TIMEOUT' || error.code === 'BAD_RESPONSE') return true
  // A capacity, credit or quota refusal can come as a 503 or 429; it is an answer (see refusals.ts).
  if (error.code !== 'API_ERROR') return false
  return error.httpStatus === 429 || (error.httpStatus !== undefined && error.httpStatus >= 500)
}

/** After a mutation failed this way, whether the server applied it is unknown: read the state before repeating it. */
export function isOutcomeUnknown(error: unknown): boolean {
  return isTransient(error) && !(error instanceof TargonError && error.httpStatus === 429)
}

export interface ApiPollOptions extends Omit<PollOptions, 'onTrouble'> {
  /** Whether a transient failure of the check is waited out (the default) or thrown at once. */
  waitOutTrouble?: boolean
}

/** Transient API trouble is waited out, at least as long as a Retry-After said; anything else is thrown. */
export function apiTrouble(error: unknown): number | undefined {
  if (!isTransient(error)) return undefined
  const retryAfter = (error as TargonError).details?.retry_after_ms
  return typeof retryAfter === 'number' ? retryAfter : 0
}

/** The wait loop over API reads: what a busy API answers in between only makes it back off. */
export function pollUntil<T>(check: () => Promise<T | undefined>, options: ApiPollOptions): Promise<T | undefined> {
  const {waitOutTrouble, ...rest} = options
  return poll(check, {...rest, onTrouble: waitOutTrouble === false ? undefined : apiTrouble})
}
