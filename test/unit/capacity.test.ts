import {describe, expect, it} from 'vitest'

import {capacityPollDelay} from '../../src/lib/domain/capacity/poll-delay.js'

describe('inventory reads while waiting for capacity', () => {
  it('never come closer than the floor, whatever the jitter', () => {
    for (const floor of [100, 300, 15_000]) {
      for (let misses = 0; misses < 20; misses++) {
        for (const random of [() => 0, () => 0.5, () => 0.999_999, Math.random]) {
          expect(capacityPollDelay(misses, floor, random)).toBeGreaterThanOrEqual(floor)
        }
      }
    }
  })

  it('back off by half again per read that found nothing, up to four times the floor, plus at most 20 % of jitter', () => {
    const floor = 15_000
    expect([0, 1, 2, 3, 4, 10].map((misses) => capacityPollDelay(misses, floor, () => 0))).toEqual([
      15_000, 22_500, 33_750, 50_625, 60_000, 60_000,
    ])
    for (let sample = 0; sample < 500; sample++) {
      const misses = sample % 8
      const base = Math.min(4 * floor, floor * 1.5 ** misses)
      const delay = capacityPollDelay(misses, floor)
      expect(delay).toBeGreaterThanOrEqual(base)
      expect(delay).toBeLessThanOrEqual(Math.ceil(base * 1.2))
    }
  })

  it('are spread by the jitter, so that waiting runs do not read in step', () => {
    const delays = new Set(Array.from({length: 50}, () => capacityPollDelay(0, 15_000)))
    expect(delays.size).toBeGreaterThan(10)
  })
})
