/** The bounded-concurrency primitive: never more than the limit at once, results in order, nothing new after a failure. */
import {setTimeout as sleep} from 'node:timers/promises'
import {describe, expect, it} from 'vitest'

import {Slots, mapBounded} from '../../src/lib/core/concurrency.js'

describe('mapBounded', () => {
  it('keeps at most `limit` in flight and the results in the order of the items', async () => {
    let inFlight = 0
    let most = 0
    const results = await mapBounded([30, 5, 20, 1, 10, 2], 2, async (ms, index) => {
      most = Math.max(most, ++inFlight)
      await sleep(ms)
      inFlight--
      return index * 10
    })
    expect(results).toEqual([0, 10, 20, 30, 40, 50])
    expect(most).toBe(2)
  })

  it('starts no item after one failed, and throws that failure', async () => {
    const started: number[] = []
    const run = mapBounded([1, 2, 3, 4], 1, async (item) => {
      started.push(item)
      if (item === 2) throw new Error('boom')
      return item
    })
    await expect(run).rejects.toThrow('boom')
    await sleep(5)
    expect(started).toEqual([1, 2])
  })
})

describe('Slots', () => {
  it('serves waiters in arrival order and never lets a limit below one stall', async () => {
    const slots = new Slots(0)
    const order: string[] = []
    const first = await slots.take()
    const waiting = ['a', 'b'].map(async (name) => {
      const release = await slots.take()
      order.push(name)
      release()
    })
    first()
    await Promise.all(waiting)
    expect(order).toEqual(['a', 'b'])
  })
})
