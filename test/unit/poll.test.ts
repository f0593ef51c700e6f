import {describe, expect, it} from 'vitest'

import {pollDelay} from '../../src/lib/targon/wait.js'

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
        const delay = pollDelay(poll, elapsed)
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
        at += pollDelay(poll, at)
        polls++
      }

      expect(at).toBeLessThanOrEqual(7500)
      expect(polls).toBeLessThanOrEqual(6)
    }
  })
})
