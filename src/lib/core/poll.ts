/**
 * The one wait loop: call a check until it gives a value, backing off between calls, until an exact deadline.
 * Every wait of the project (a VM's state, SSH coming up, a deletion showing, the shim's health, a console being
 * followed, a notification being retried) is this loop with its own check, delays and trouble rule. Retrying one
 * HTTP exchange is retry.ts; a mutation's reconciling, reconcile.ts (which waits with this loop).
 */
import {type Clock, REAL_CLOCK} from './clock.js'
import {abortError} from './errors.js'

export interface PollOptions {
  /**
   * Epoch ms (of `clock`) at which the wait gives up (returns undefined), after a last check at that moment. Read
   * before every wait, so that a getter may move it.
   */
  deadline: number
  /** Delay before the next check. */
  delayMs: (poll: number, elapsedMs: number) => number
  signal?: AbortSignal
  clock?: Clock
  /**
   * How a check that threw is taken: trouble worth waiting out gives the least delay before the next check (0: the
   * usual one); undefined throws it. Without this, every error is thrown.
   */
  onTrouble?: (error: unknown) => number | undefined
}

/**
 * Calls `check` until it returns a value; undefined when the deadline comes first. The deadline is exact: the last
 * delay is cut short so that one check falls on the deadline itself, and none after it. An abort of `signal` ends
 * the wait with the signal's reason.
 */
export async function poll<T>(check: () => Promise<T | undefined>, options: PollOptions): Promise<T | undefined> {
  const clock = options.clock ?? REAL_CLOCK
  const started = clock.now()
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw abortError(options.signal)
    let delay = options.delayMs(attempt, clock.now() - started)
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      const least = options.onTrouble?.(error)
      if (least === undefined) throw error
      delay = Math.max(delay, least)
    }

    const left = options.deadline - clock.now()
    if (left <= 0) return undefined
    await clock.sleep(Math.min(delay, left), options.signal)
  }
}
