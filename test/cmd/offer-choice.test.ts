/**
 * Which offers up rents and why it fails when it cannot: exit 9 when nothing matching is priced under the cap,
 * whatever its capacity (waiting would not help), exit 10 only when offers under the cap exist and are all sold
 * out; and a fleet never registers more workloads on an offer than it lists available.
 */
import {afterEach, describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'
import type {CapacityChange, TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator | undefined

afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

async function up(args: string[], capacity: CapacityChange[] = []) {
  sim = await startSimulator({bootDelayMs: 50, capacitySchedule: capacity})
  const result = await runInProcess(['up', ...args, '--no-bootstrap', '--json'], {
    env: simulatorEnv(sim, {TARGON_CAPACITY_POLL_INTERVAL: '0.2', TARGON_CONFIG_DIR: tempDir('targon-config-')}),
  })
  return {doc: parseJson(result), result, sim}
}

const registered = (sim: TargonSimulator) => [...sim.workloads.values()].filter((workload) => workload.status === 'registered')

describe('over the cap or sold out', () => {
  it('exits 9 at once when the only match is over the cap and sold out, even with --wait', async () => {
    for (const extra of [[], ['--wait', '1m']]) {
      const {doc, result, sim} = await up(['h200-xlarge', '--max-price', '5', ...extra])
      expect(result.code, result.stdout).toBe(9)
      expect(doc.error.code).toBe('PRICE_CAP_EXCEEDED')
      expect(doc.error.message).toContain('h200-xlarge at 19.92 USD/h, sold out now')
      expect(sim.workloads.size).toBe(0)
      await sim.stop()
    }
  })

  it('exits 10 when offers under the cap exist and all are sold out', async () => {
    const {doc, result, sim} = await up(['--gpu', 'h200', '--max-price', '3'], [{atMs: 0, available: 0, offer: 'h200-small'}])
    expect(result.code, result.stdout).toBe(10)
    expect(doc.error.code).toBe('NO_CAPACITY')
    expect(sim.workloads.size).toBe(0)
  })
})

describe('--count against the units an offer lists', () => {
  it('takes the next offer under the cap for what the cheapest cannot hold, leaving nothing registered', async () => {
    const {doc, result, sim} = await up(
      ['--gpu', 'rtx6000b', '--max-price', '1.8', '--count', '2'],
      [{atMs: 0, available: 1, offer: 'rtx6000b-small'}],
    )
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data.vms.map((vm: {resource: string}) => vm.resource).sort()).toEqual(['rtx6000b-small', 'rtx6000b-small-b'])
    expect(sim.workloads.size).toBe(2)
    expect(sim.requests('POST', '/deploy').every((request) => request.status === 200)).toBe(true)
  })

  it('fails what finds no unit as NO_CAPACITY: all or nothing rolls back, --min keeps the rest; no registered leftover', async () => {
    const one = [{atMs: 0, available: 1, offer: 'rtx6000b-small'}]
    const all = await up(['rtx6000b-small', '--max-price', '1.8', '--count', '2'], one)
    expect(all.result.code, all.result.stdout).toBe(11)
    expect(all.doc.data.failed.map((failure: {error: {code: string}}) => failure.error.code)).toContain('NO_CAPACITY')
    expect(all.sim.requests('POST', /\/workloads$/)).toHaveLength(1)
    expect(registered(all.sim)).toEqual([])
    expect(all.sim.billing()).toEqual([])
    await all.sim.stop()

    const partial = await up(['rtx6000b-small', '--max-price', '1.8', '--count', '2', '--min', '1'], one)
    expect(partial.result.code, partial.result.stdout).toBe(0)
    expect(partial.doc.data.vms).toHaveLength(1)
    expect(registered(partial.sim)).toEqual([])
    expect(partial.sim.billing()).toHaveLength(1)
  })
})
