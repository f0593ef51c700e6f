/** Starts a simulator for a test file and stops it afterwards. */
import {afterAll, beforeAll} from 'vitest'

import {DEFAULT_TOKEN, type SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'

export function simulatorEnv(sim: TargonSimulator, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {TARGON_API_KEY: DEFAULT_TOKEN, TARGON_API_URL: sim.url, ...extra}
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<TargonSimulator> {
  const sim = new TargonSimulator(options)
  await sim.start()
  return sim
}

/** A simulator shared by the tests of one file. */
export function useSimulator(options: SimulatorOptions = {}): {current: TargonSimulator} {
  const holder = {} as {current: TargonSimulator}
  beforeAll(async () => {
    holder.current = await startSimulator(options)
  })
  afterAll(async () => {
    await holder.current?.stop()
  })
  return holder
}
