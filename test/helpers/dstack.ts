/** Starts a dstack server double (test/dstack/simulator.ts) for a test file and stops it afterwards. */
import {afterAll, beforeAll} from 'vitest'

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
