/** Starts a simulator for a test file and stops it afterwards. */
import {afterAll, afterEach, beforeAll} from 'vitest'

import {DEFAULT_TOKEN, type SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'
import {VmFarm} from '../vm/farm.js'
import {TargonClient} from '../../src/lib/adapters/targon/client.js'
import {tempDir} from './cli.js'

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

/** A fresh simulator and config directory per test: `setup()` starts them; the simulator stops after the test. */
export function useFreshSimulator(): {sim: TargonSimulator; configDir: string; setup: (options?: SimulatorOptions) => Promise<void>} {
  const context = {
    configDir: '',
    async setup(options: SimulatorOptions = {}) {
      context.sim = await startSimulator(options)
      context.configDir = tempDir('targon-config-')
    },
  } as {sim: TargonSimulator; configDir: string; setup: (options?: SimulatorOptions) => Promise<void>}
  afterEach(async () => {
    await context.sim?.stop()
  })
  return context
}

/**
 * In process: a fresh simulator and an API client for it per test; `start()` makes them, and both end after the
 * test. With a `clock` (a fake one), client and simulator both read it: waits and back-offs take no real time.
 */
export function useSimulatorClient(): {start: (options?: SimulatorOptions) => Promise<{sim: TargonSimulator; client: TargonClient}>} {
  let current: {sim: TargonSimulator; client: TargonClient} | undefined
  const stop = async () => {
    await current?.client.close()
    await current?.sim.stop()
    current = undefined
  }

  afterEach(stop)
  return {
    // A second start in one test ends the first.
    async start(options: SimulatorOptions = {}) {
      await stop()
      const sim = await startSimulator(options)
      const clock = options.clock === undefined ? {} : {clock: options.clock}
      current = {client: new TargonClient({...clock, baseUrl: sim.url, retryBaseMs: 5, token: DEFAULT_TOKEN}), sim}
      return current
    },
  }
}

/**
 * A simulator whose running workloads are simulated VMs (real sshd hosts), shared by the tests of one file. By
 * default a deploy is answered once its VM runs: the first look at the state finds it running, and no test waits
 * the second before the next (the scenarios with a deploy timing keep the VM booting while it is provisioning).
 */
export function useSimulatedVms(options: SimulatorOptions = {answerDeployOnceBooted: true, bootDelayMs: 200}): {
  sim: TargonSimulator
  farm: VmFarm
} {
  const holder = {} as {sim: TargonSimulator; farm: VmFarm}
  beforeAll(async () => {
    holder.sim = await startSimulator(options)
    holder.farm = new VmFarm(holder.sim)
  })
  afterAll(async () => {
    await holder.farm?.stopAll()
    await holder.sim?.stop()
  })
  return holder
}
