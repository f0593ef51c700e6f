/** Starts a dstack server double (test/dstack/simulator.ts) for a test file and stops it afterwards. */
import {afterAll, afterEach, beforeAll} from 'vitest'

import {DstackClient} from '../../src/lib/adapters/dstack/client.js'
import {fakeClock} from './fake-clock.js'

import {DSTACK_PROJECT, DSTACK_TOKEN, DstackSimulator, type DstackSimulatorOptions} from '../dstack/simulator.js'

export async function startDstack(options: DstackSimulatorOptions = {}): Promise<DstackSimulator> {
  const dstack = new DstackSimulator(options)
  await dstack.start()
  return dstack
}

/** A dstack double shared by the tests of one file. */
export function useDstack(options: DstackSimulatorOptions = {}): {current: DstackSimulator} {
  const holder = {} as {current: DstackSimulator}
  beforeAll(async () => {
    holder.current = await startDstack(options)
  })
  afterAll(async () => {
    await holder.current?.stop()
  })
  return holder
}

export {DSTACK_PROJECT, DSTACK_TOKEN}

/**
 * A fresh dstack double and a client of it for each test, on one fake clock (the double's delays and the client's
 * back-offs take no time): `start()` in the test, stopped after it.
 */
export function useDstackClient(): {
  start: (options?: DstackSimulatorOptions) => Promise<{clock: ReturnType<typeof fakeClock>; client: DstackClient; dstack: DstackSimulator}>
} {
  let running: {client: DstackClient; dstack: DstackSimulator} | undefined
  afterEach(async () => {
    await running?.client.close()
    await running?.dstack.stop()
    running = undefined
  })
  return {
    async start(options = {}) {
      const clock = fakeClock(Date.parse('2026-05-01T00:00:00Z'))
      const dstack = await startDstack({...options, clock})
      const client = new DstackClient({clock, project: DSTACK_PROJECT, token: DSTACK_TOKEN, url: dstack.url})
      running = {client, dstack}
      return {client, clock, dstack}
    },
  }
}
