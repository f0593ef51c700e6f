import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import type {Clock} from '../../src/lib/core/clock.js'
import {poll} from '../../src/lib/core/poll.js'
import {pollUntil} from '../../src/lib/core/wait.js'
import {BACKOFF} from '../../src/lib/core/backoff.js'

describe('state poll delays', () => {
  it('grow from 1 s by 0.5 s to 5 s, then 10 s after five minutes, jittered only downwards by up to 10 %', () => {
    for (let sample = 0; sample < 200; sample++) {
      for (const [poll, elapsed, base] of [
        [0, 0, 1000],
        [1, 1000, 1500],
        [3, 5000, 2500],
        [8, 30_000, 5000],
        [20, 60_000, 5000],
        [40, 301_000, 10_000],
      ] as const) {
        const delay = BACKOFF.runningLook(poll, elapsed)
        expect(delay).toBeLessThanOrEqual(base)
        expect(delay).toBeGreaterThanOrEqual(base * 0.9)
      }
    }
  })

  it('see a VM that runs 5 s after deploy within 7.5 s, with at most 6 polls', () => {
    for (let sample = 0; sample < 200; sample++) {
      // The first poll follows deploy at once; then one after each delay.
      let at = 0
      let polls = 1
      for (let poll = 0; at < 5000; poll++) {
        at += BACKOFF.runningLook(poll, at)
        polls++
      }

      expect(at).toBeLessThanOrEqual(7500)
      expect(polls).toBeLessThanOrEqual(6)
    }
  })
})

/** A clock that only moves when the poll sleeps. */
function fakeClock(start = 0): Clock & {sleeps: number[]} {
  let now = start
  const sleeps: number[] = []
  return {
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms)
      now += ms
    },
    sleeps,
  }
}

describe('the poll core', () => {
  it('checks once more exactly at the deadline, and never after it', async () => {
    const clock = fakeClock()
    const checks: number[] = []
    const outcome = await pollUntil(
      async () => {
        checks.push(clock.now())
        return undefined
      },
      {clock, deadline: 2500, delayMs: () => 1000},
    )
    expect(outcome).toBeUndefined()
    expect(checks).toEqual([0, 1000, 2000, 2500])
    expect(clock.sleeps).toEqual([1000, 1000, 500])
  })

  it('waits out transient trouble (a Retry-After lengthens the delay) unless told to throw it', async () => {
    const busy = new TargonError('API_ERROR', 'busy', {details: {retry_after_ms: 3000}, httpStatus: 503})
    const clock = fakeClock()
    let calls = 0
    const value = await pollUntil(
      async () => {
        calls++
        if (calls < 3) throw busy
        return 'ok'
      },
      {clock, deadline: 60_000, delayMs: () => 1000},
    )
    expect(value).toBe('ok')
    expect(clock.sleeps).toEqual([3000, 3000])
    await expect(
      pollUntil(async () => Promise.reject(busy), {clock: fakeClock(), deadline: 60_000, delayMs: () => 1000, waitOutTrouble: false}),
    ).rejects.toBe(busy)
  })

  it('throws a failure that is not transient at once', async () => {
    const refused = new TargonError('QUOTA_EXCEEDED', 'limit', {httpStatus: 429})
    await expect(pollUntil(async () => Promise.reject(refused), {clock: fakeClock(), deadline: 60_000, delayMs: () => 1000})).rejects.toBe(
      refused,
    )
  })

  it('reads a moving deadline before every wait (SSH waits longer while the VM boots, less once it runs)', async () => {
    const clock = fakeClock()
    let deadline = 10_000
    const checks: number[] = []
    await poll(
      async () => {
        checks.push(clock.now())
        // The VM says running at 2 s: from then on, 1.5 s more at most.
        if (clock.now() === 2000) deadline = 3500
        return undefined
      },
      {
        clock,
        get deadline() {
          return deadline
        },
        delayMs: () => 1000,
      },
    )
    expect(checks).toEqual([0, 1000, 2000, 3000, 3500])
  })

  it('ends at once on an aborted signal, with its reason, and throws every failure without a trouble rule', async () => {
    const controller = new AbortController()
    const reason = new TargonError('INTERRUPTED', 'interrupted by SIGINT')
    controller.abort(reason)
    let calls = 0
    const check = async () => {
      calls++
      return undefined
    }
    await expect(poll(check, {clock: fakeClock(), deadline: 60_000, delayMs: () => 1000, signal: controller.signal})).rejects.toBe(reason)
    expect(calls).toBe(0)
    const failure = new Error('sshd said no')
    await expect(poll(async () => Promise.reject(failure), {clock: fakeClock(), deadline: 60_000, delayMs: () => 1000})).rejects.toBe(
      failure,
    )
  })
})
