/**
 * A seeded soak: up/down rounds against a simulator that answers about one call in ten with transient trouble (a
 * 503 without a reason, a 502 after the change was made, a reset before or after it, a 429). Every up succeeds,
 * and every down --all leaves nothing billing. The trouble is drawn per request from the seed, so a failing seed
 * replays: TARGON_SOAK_SEED=<n> npm run soak. It runs outside npm test.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {targonFor} from '../helpers/fixture.js'
import {startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'

const SEED = Number(process.env.TARGON_SOAK_SEED ?? 20261201)
const RATE = Number(process.env.TARGON_SOAK_RATE ?? 0.1)
const ROUNDS = 20
const LANES = 2

let sim: TargonSimulator
// Every run names its config directory: each lane has its own, and the cron run an empty one.
const targon = targonFor(() => ({configDir: '', sim}))

beforeAll(async () => {
  sim = await startSimulator({bootDelayMs: 100, chaos: {rate: RATE, seed: SEED}, deleteLatencyMs: 20})
})

afterAll(async () => {
  await sim?.stop()
})

describe(`soak (seed ${SEED})`, () => {
  it(`${ROUNDS} up/down rounds under ${Math.round(RATE * 100)} % transient trouble: every up succeeds, every down of its fleet leaves nothing billing`, async () => {
    const lane = async (index: number) => {
      const laneOptions = {config: tempDir('targon-soak-'), env: {TARGON_RECONCILE_WINDOW: '1'}}
      for (let round = index; round < ROUNDS; round += LANES) {
        const fleet = `soak${index}`
        const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, '--json'], laneOptions)
        expect(up.code, `round ${round} up: ${up.stdout}${up.stderr}`).toBe(0)
        const uid = parseJson(up).data.vms[0].uid as string
        const down = await targon(['down', '--fleet', fleet, '--json'], laneOptions)
        expect(down.code, `round ${round} down: ${down.stdout}`).toBe(0)
        expect(sim.current(uid) === undefined || !['provisioning', 'running'].includes(sim.current(uid)!.status), `round ${round}`).toBe(
          true,
        )
      }
    }

    await Promise.all(Array.from({length: LANES}, (_, index) => lane(index)))
    expect(sim.log.filter((request) => request.status === -1 || request.status >= 500).length).toBeGreaterThan(0)
    expect(sim.billing()).toEqual([])
    // Once the trouble stops, a cron run finds nothing left to delete.
    sim.clearFaults()
    const cron = await targon(['down', '--all', '--json'], {config: tempDir('targon-cron-')})
    expect(cron.code).toBe(0)
    expect(sim.billing()).toEqual([])
  }, 120_000)
})
