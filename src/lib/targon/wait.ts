/**
 * Waiting on the API. A wait (for running, for SSH, for a deletion to show) ends only when its
 * check says so, on a real terminal state that the check throws, or at its deadline: what a busy
 * API answers in between (429 with or without Retry-After, 5xx, resets, lost answers) only makes
 * it back off.
 */
import {type Clock, REAL_CLOCK} from '../core/clock.js'

import {TargonError} from '../core/errors.js'

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

export interface PollOptions {
  /** Epoch ms (of `clock`) at which the wait gives up (returns undefined), after a last check at that moment. */
  deadline: number
  /** Delay before the next check. */
  delayMs: (poll: number, elapsedMs: number) => number
  signal?: AbortSignal
  clock?: Clock
  /** Whether a transient failure of `check` is waited out (the default) or thrown at once. */
  waitOutTrouble?: boolean
}

/**
 * Calls `check` until it returns a value; undefined when the deadline comes first. The deadline is exact: the last
 * delay is cut short so that one check falls on the deadline itself, and none after it.
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, options: PollOptions): Promise<T | undefined> {
  const clock = options.clock ?? REAL_CLOCK
  const started = clock.now()
  for (let poll = 0; ; poll++) {
    let delay = options.delayMs(poll, clock.now() - started)
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      if (!isTransient(error) || options.waitOutTrouble === false) throw error
      const retryAfter = (error as TargonError).details?.retry_after_ms
      if (typeof retryAfter === 'number') delay = Math.max(delay, retryAfter)
    }

    const left = options.deadline - clock.now()
    if (left <= 0) return undefined
    await clock.sleep(Math.min(delay, left), options.signal)
  }
}

/**
 * State-poll delays: 1 s, then +0.5 s per poll up to 5 s (10 s after five minutes), less up to 10 % of jitter. The
 * jitter spreads the polls of a fleet; it only ever shortens a delay, so it never delays noticing a running VM.
 */
export function pollDelay(poll: number, elapsedMs: number): number {
  const base = elapsedMs > 5 * 60_000 ? 10_000 : Math.min(5000, 1000 + 500 * poll)
  return Math.round(base * (1 - Math.random() * 0.1))
}
