/** A clock that only moves when something sleeps on it: waits and back-offs run in no real time. */
import type {Clock} from '../../src/lib/core/clock.js'
import {abortError} from '../../src/lib/core/errors.js'

export function fakeClock(start = 0): Clock & {sleeps: number[]} {
  let now = start
  const sleeps: number[] = []
  return {
    now: () => now,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw abortError(signal)
      sleeps.push(ms)
      now += ms
    },
    sleeps,
  }
}
