/**
 * Retrying one exchange: try, and on a failure that its rule calls worth another try, sleep the delay the rule gives
 * and try again. Unlike a wait (poll.ts), it has no state to reach and no deadline of its own: the rule bounds the
 * attempts, and the signal ends it.
 */
import {type Clock, REAL_CLOCK} from './clock.js'
import {abortError} from './errors.js'

export interface RetryOptions {
  /** The delay in ms before the next attempt after `error` ended attempt `attempt` (from 1); undefined: give up. */
  delayAfter: (error: unknown, attempt: number) => number | undefined
  signal?: AbortSignal
  clock?: Clock
}

/** The first answer of `attempt`; the last error, once the rule gives up; the signal's reason once it aborts. */
export async function retry<T>(attempt: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const clock = options.clock ?? REAL_CLOCK
  for (let count = 1; ; count++) {
    if (options.signal?.aborted) throw abortError(options.signal)
    try {
      return await attempt(count)
    } catch (error) {
      const delay = options.delayAfter(error, count)
      if (delay === undefined) throw error
      await clock.sleep(delay, options.signal)
    }
  }
}
