/** Scale on simulated VMs: a fleet of 16 brought up and bootstrapped at once (alone: 16 VMs would starve other files). */
import {afterEach, describe, expect, it} from 'vitest'

import {parseJson, runCli, tempDir} from '../helpers/cli.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'
import {fleetOffers} from '../simulator/seed.js'
import type {TargonSimulator} from '../simulator/simulator.js'
import {VmFarm} from '../vm/farm.js'

let sim: TargonSimulator | undefined
let farm: VmFarm | undefined
afterEach(async () => {
  await farm?.stopAll()
  await sim?.stop()
  farm = undefined
  sim = undefined
})

describe('scale', () => {
  it('up --count 16 brings up and bootstraps 16 simulated VMs', async () => {
    sim = await startSimulator({
      bootDelayMs: 500,
      offers: fleetOffers(20),
    })
    farm = new VmFarm(sim)
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir()})
    const result = await runCli(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '16', '--json'], {env, timeoutMs: 240_000})
    expect(result.code, result.stdout.slice(0, 2000)).toBe(0)
    const vms = parseJson(result).data.vms as {dstack: {healthy: boolean}}[]
    expect(vms).toHaveLength(16)
    expect(vms.every((vm) => vm.dstack.healthy)).toBe(true)
    expect(sim.live()).toHaveLength(16)
    expect((await runCli(['down', '--all', '--json'], {env, timeoutMs: 120_000})).code).toBe(0)
    expect(sim.live()).toEqual([])
  }, 300_000)
})
