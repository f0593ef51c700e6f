/** The floor of time to ready under the latency model (test/vm/latency.ts), which bench figure 11 measures against. */
import {describe, expect, it} from 'vitest'

import {LATENCY_MODEL, readyFloorSeconds} from '../vm/latency.js'

describe('the floor of time to ready', () => {
  it('is SSH, then the install in order, then a healthy shim, with the defaults', () => {
    // 30 + (0.9 + 4 + 4 + 2 + 25 + 6) + 2 + 6 + 2, above the 60 s of running.
    expect(readyFloorSeconds()).toBeCloseTo(81.9, 6)
  })

  it('is the state saying running when that comes last', () => {
    expect(readyFloorSeconds({...LATENCY_MODEL, runningSeconds: 120})).toBe(120)
  })

  it('waits for the address when SSH would answer before it', () => {
    expect(readyFloorSeconds({...LATENCY_MODEL, addressSeconds: 40})).toBeCloseTo(91.9, 6)
  })

  it('hides the shim download behind apt, until it takes longer', () => {
    expect(readyFloorSeconds({...LATENCY_MODEL, shimDownloadSeconds: 41})).toBeCloseTo(81.9, 6)
    expect(readyFloorSeconds({...LATENCY_MODEL, shimDownloadSeconds: 50})).toBeCloseTo(90, 6)
  })
})
