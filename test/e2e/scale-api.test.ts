/**
 * Scale of the API without faults being fatal: hundreds of workloads, paginated lists, a fleet of 16 created at once.
 * No simulated VMs: these run beside the other files (scale.test.ts boots 16 VMs, alone).
 */
import {afterEach, describe, expect, it} from 'vitest'

import {parseJson, runCli, tempDir} from '../helpers/cli.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'
import {fleetOffers} from '../simulator/seed.js'
import type {TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator | undefined
afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

function addRunning(simulator: TargonSimulator, count: number, prefix = 'tcli-default-s') {
  for (let index = 0; index < count; index++) {
    simulator.addWorkload({deployedAt: Date.now(), name: `${prefix}${String(index).padStart(4, '0')}`, status: 'running'})
  }
}

describe('scale of the API', () => {
  it('down --all deletes 200 workloads through latency and intermittent 5xx, and verifies it', async () => {
    sim = await startSimulator({maxPageSize: 50, teardownDelayMs: 50})
    addRunning(sim, 200)
    sim.inject({method: 'DELETE', path: '/workloads/', statusAfterCommit: 502, times: 15})
    sim.inject({method: 'GET', path: /\/workloads$/, status: 503, times: 2})
    sim.inject({path: '/workloads', delayMs: 50})
    const result = await runCli(['down', '--all', '--json'], {env: simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir()}), timeoutMs: 180_000})
    expect(result.code, result.stderr).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.results).toHaveLength(200)
    expect(doc.data.survivors).toEqual([])
    expect(sim.live()).toEqual([])
    expect(sim.requests('DELETE', '/workloads/').length).toBe(200)
  }, 200_000)

  it('status lists 500 workloads over paginated lists', async () => {
    sim = await startSimulator({maxPageSize: 50})
    addRunning(sim, 480)
    addRunning(sim, 20, 'other-')
    const result = await runCli(['status', '--all-fleets', '--any-origin', '--json'], {
      env: simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir()}),
    })
    expect(result.code).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms).toHaveLength(500)
    expect(doc.data.vms.filter((vm: {origin: string}) => vm.origin === 'other')).toHaveLength(20)
    expect(sim.requests('GET', /\/workloads$/).length).toBeGreaterThanOrEqual(10)
  })

  it('up --count 16 keeps at most 8 creates and deploys in flight on a slow API', async () => {
    sim = await startSimulator({
      bootDelayMs: 200,
      offers: fleetOffers(20),
    })
    sim.inject({delayMs: 300, method: 'POST', path: '/workloads'})
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir()})
    const result = await runCli(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '16', '--no-bootstrap', '--json'], {
      env,
      timeoutMs: 120_000,
    })
    expect(result.code, result.stdout.slice(0, 2000)).toBe(0)
    expect(sim.live().filter((workload) => workload.status === 'running')).toHaveLength(16)
    expect(sim.maxInFlight.POST).toBe(8)
    expect((await runCli(['down', '--all', '--json'], {env, timeoutMs: 120_000})).code).toBe(0)
    expect(sim.live()).toEqual([])
  }, 150_000)
})
