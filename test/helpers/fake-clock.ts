/**
 * The fake clocks of the tests. `fakeClock`: time that only moves when something sleeps on it, for a workflow and its
 * simulator in one test (waits and back-offs run in no real time). `skippingClock`: real time plus every sleep
 * skipped, for commands run in process against a simulator that a test also drives with real timers; a subprocess run
 * against the same simulator still works, on real time, the simulator merely ahead of it.
 */
import {setImmediate as yieldToIo} from 'node:timers/promises'

import {type Clock, REAL_CLOCK} from '../../src/lib/core/clock.js'
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

export interface SkippingClock extends Clock {
  /** The simulator's: the same time, but its own delays (a slow answer) are real, as the client's HTTP timeouts are. */
  readonly simulator: Clock
}

export function skippingClock(): SkippingClock {
  let skipped = 0
  const now = () => Date.now() + skipped
  return {
    now,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw abortError(signal)
      skipped += ms
      // What runs beside the sleeper (an answer on its way, a signal) gets its turn, as after a real sleep.
      await yieldToIo()
    },
    simulator: {now, sleep: (ms, signal) => REAL_CLOCK.sleep(ms, signal)},
  }
}
