/** Time as waits see it: the real clock, or a fake one in tests; and the longest delay a timer can take. */
import {setTimeout as sleep} from 'node:timers/promises'

import {abortError} from './errors.js'

export interface Clock {
  now(): number
  /** Resolves after `ms`; rejects (with the signal's reason) once `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>
}

export const REAL_CLOCK: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    sleep(ms, undefined, {signal}).catch(() => {
      throw abortError(signal)
    }),
}

/** Milliseconds since the call, on `clock`: how long a step took. */
export function stopwatch(clock: Pick<Clock, 'now'>): () => number {
  const started = clock.now()
  return () => clock.now() - started
}

/** The clock's present as an ISO 8601 timestamp. */
export function isoNow(clock: Pick<Clock, 'now'>): string {
  return new Date(clock.now()).toISOString()
}

/** setTimeout's limit (about 24.8 days); a longer delay would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1
