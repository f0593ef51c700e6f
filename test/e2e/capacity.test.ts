/**
 * `up --wait`: waiting for capacity that appears (or never does) on the simulator's capacity schedule, with
 * simulated VMs. Every run ends with nothing billing in the simulator's ledger.
 */
import {afterEach, describe, expect, it} from 'vitest'

import {CONFIG_FILE_VARIANTS, type CliResult, parseJson, signalWhen, tempDir, waitFor} from '../helpers/cli.js'
import {expectOneRunInOrder, parseEvents} from '../helpers/events.js'
import {targonFor} from '../helpers/fixture.js'
import {startSimulator} from '../helpers/simulator.js'
import type {CapacityChange, LoggedRequest, SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'
import {VmFarm} from '../vm/farm.js'

/** The floor between two inventory reads in these tests (TARGON_CAPACITY_POLL_INTERVAL). */
const FLOOR_MS = 300

let sim: TargonSimulator
let farm: VmFarm | undefined
let configDir: string
const targon = targonFor(() => ({configDir, sim}), {
  inProcess: true,
  defaults: {timeoutMs: 90_000},
  env: {TARGON_CAPACITY_POLL_INTERVAL: String(FLOOR_MS / 1000), TARGON_PULL_RETRY_DELAY: '0.2', TARGON_SHIM_HEALTH_TIMEOUT: '4'},
})

afterEach(async () => {
  await farm?.stopAll()
  await sim?.stop()
  farm = undefined
})

async function setup(options: SimulatorOptions & {vms?: boolean} = {}) {
  sim = await startSimulator({bootDelayMs: 300, ...options})
  if (options.vms) farm = new VmFarm(sim)
  configDir = tempDir('targon-config-')
}

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8']
const soldOut = (offer = 'rtx6000b-small'): CapacityChange => ({atMs: 0, available: 0, offer})

const inventoryReads = () => sim.requests('GET', '/tha/v3/inventory')
const creates = () => sim.requests('POST', /\/workloads$/)
const deploys = () => sim.requests('POST', /\/deploy$/)
const registered = () => sim.live().filter((workload) => workload.status === 'registered')

/** Gaps between inventory reads: the first read is up's own choice of offer, each later one a poll. */
function gaps(reads: LoggedRequest[]): number[] {
  return reads.slice(1).map((read, index) => read.at - (reads[index] as LoggedRequest).at)
}

/** Deletes what a run left (from an empty config directory, like a cron job) and checks that nothing bills. */
async function expectNothingBilling(): Promise<void> {
  const down = await targon(['down', '--all', '--json'], {env: {TARGON_CONFIG_DIR: tempDir('targon-cron-')}})
  expect(down.code, down.stdout + down.stderr).toBe(0)
  expect(sim.billing().map((workload) => `${workload.name} ${workload.status}`)).toEqual([])
}

/**
 * Capacity for the offer `afterMs` after up's first inventory read, whenever its start-up lets it make that read (a
 * loaded machine starts a process late); when it appears.
 */
async function capacityAfterFirstRead(afterMs: number): Promise<number> {
  await waitFor(() => inventoryReads().length > 0, 30_000)
  sim.scheduleCapacity([{atMs: afterMs, available: 1, offer: 'rtx6000b-small'}])
  return Date.now() + afterMs
}

describe('up --wait', () => {
  it('waits for capacity that appears later, reading the inventory without the key and creating nothing meanwhile', async () => {
    await setup({vms: true})
    sim.scheduleCapacity([soldOut()])
    const running = targon([...UP, '--wait', '1m', '--json', '--events', 'ndjson'])
    const appearsAt = await capacityAfterFirstRead(2500)
    const result = await running
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    // The events tell the wait (what register waits for, while it waits) and then the capacity found.
    const events = parseEvents(result.stderr)
    expectOneRunInOrder(events)
    const waiting = events.filter((event) => event.type === 'progress' && event.phase === 'register')
    expect(waiting.length).toBeGreaterThanOrEqual(1)
    expect(Date.parse(waiting[0]?.time ?? '')).toBeLessThan(appearsAt)
    const found = events.findIndex((event) => event.detail === 'capacity found under the cap')
    expect(found).toBeGreaterThan(events.indexOf(waiting[0] as (typeof events)[number]))
    expect(found).toBeLessThan(events.findIndex((event) => event.phase === 'register' && event.status === 'done'))
    expect(doc.data.capacity_wait_s).toBeGreaterThan(0)
    expect(doc.data.vms).toHaveLength(1)
    expect(doc.data.vms[0]).toMatchObject({dstack: {healthy: true}, resource: 'rtx6000b-small', status: 'running'})

    const reads = inventoryReads()
    expect(reads.length).toBeGreaterThanOrEqual(3)
    expect(reads.filter((read) => read.authorized)).toEqual([])
    for (const gap of gaps(reads)) expect(gap).toBeGreaterThanOrEqual(FLOOR_MS)
    // Nothing was created or deployed before capacity appeared, and only one workload at all.
    expect(reads.filter((read) => read.at < appearsAt).length).toBeGreaterThanOrEqual(2)
    expect([...creates(), ...deploys()].filter((request) => request.at < appearsAt)).toEqual([])
    expect(creates()).toHaveLength(1)
    expect(sim.workloads.size).toBe(1)
    await expectNothingBilling()
  })

  it('shows the waiting line at once in text mode, not only at the next inventory read', async () => {
    await setup()
    sim.scheduleCapacity([soldOut()])
    // One read before capacity appears, the next only once it is there: the first read's line is the only one.
    const running = targon([...UP, '--no-bootstrap', '--wait', '1m'], {env: {TARGON_CAPACITY_POLL_INTERVAL: '3'}})
    await capacityAfterFirstRead(1000)
    const result = await running
    expect(result.code, result.stderr).toBe(0)
    const lines = result.stderr.split('\n')
    const waiting = lines.findIndex((line) => line.includes('waiting for capacity'))
    expect(waiting, result.stderr).toBeGreaterThan(-1)
    expect(waiting).toBeLessThan(lines.findIndex((line) => line.includes('✔ register')))
    expect((await targon(['down', '--all'])).code).toBe(0)
    await expectNothingBilling()
  })

  it('--timeout counts from when capacity is found', async () => {
    await setup()
    // Capacity comes later than --timeout after the run starts, start-up included: only a timeout that counts from when
    // capacity is found lets the run succeed.
    sim.scheduleCapacity([soldOut(), {atMs: 4500, available: 1, offer: 'rtx6000b-small'}])
    const result = await targon([...UP, '--no-bootstrap', '--wait', '1m', '--timeout', '2s', '--json'])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(parseJson(result).data.capacity_wait_s).toBeGreaterThanOrEqual(2)
    await expectNothingBilling()
  })

  it('exits as without --wait when the wait runs out (10: what is under the cap is sold out), creating nothing', async () => {
    await setup()
    sim.scheduleCapacity([soldOut()])
    const started = Date.now()
    const sold = await targon([...UP, '--no-bootstrap', '--wait', '2s', '--json'])
    expect(sold.code, sold.stdout + sold.stderr).toBe(10)
    const doc = parseJson(sold)
    expect(doc.error).toMatchObject({code: 'NO_CAPACITY', exit_code: 10})
    expect(doc.error.message).toContain('--wait 2s ran out')
    // --wait counts from the run's start, so the wait itself is what remains after start-up: some, never more.
    expect(doc.data.capacity_wait_s).toBeGreaterThan(0)
    expect(doc.data.capacity_wait_s).toBeLessThanOrEqual(2)
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000)
    // At most one read per floor: the wait is 2 s, the floor 0.3 s, so at most 2000 / 300 polls after up's own read.
    expect(inventoryReads().length).toBeLessThanOrEqual(1 + Math.floor(2000 / FLOOR_MS))
    expect(inventoryReads().filter((read) => read.authorized)).toEqual([])

    // Under the cap only the sold-out rtx6000b-small; rtx6000b-small-b has capacity at 1.79 USD/h, above it. An offer
    // under the cap exists, so it is capacity that is missing (10), not a lower price. Progress says what it waits for.
    const capped = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.75', '--no-bootstrap', '--wait', '2s'])
    expect(capped.code, capped.stderr).toBe(10)
    expect(capped.stderr).toContain('waiting for capacity: rtx6000b GPUs under $1.75/h; cheapest match $1.69/h, 0 available (')
    expect(capped.stderr).toMatch(/every offer for rtx6000b GPUs at or under 1\.75 USD\/h is sold out; --wait 2s ran out/)

    expect(creates()).toEqual([])
    expect(deploys()).toEqual([])
    expect(sim.workloads.size).toBe(0)
    await expectNothingBilling()
  })

  it('does not wait when no offer is under the cap at all', async () => {
    await setup()
    const result = await targon(['up', '--gpu', 'h200', '--max-price', '1', '--wait', '1m', '--json'])
    expect(result.code).toBe(9)
    expect(parseJson(result).error.code).toBe('PRICE_CAP_EXCEEDED')
    expect(inventoryReads()).toHaveLength(1)
    expect(sim.workloads.size).toBe(0)
  })

  it('deploys a workload refused for capacity again when capacity appears, without registering another', async () => {
    await setup()
    // The deploy takes a while; meanwhile the offer sells out, so that it is refused (503 WORKLOAD_VM_NO_CAPACITY).
    sim.inject({delayMs: 800, method: 'POST', path: '/deploy', times: 1})
    const result = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--wait', '1m', '--json'], {
      onSpawn: () =>
        void waitFor(() => deploys().length > 0).then(() =>
          sim.scheduleCapacity([soldOut(), {atMs: 2500, available: 1, offer: 'rtx6000b-small'}]),
        ),
    })
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    const uid = doc.data.vms[0].uid as string
    expect(doc.data.vms[0].resource).toBe('rtx6000b-small')
    expect(deploys().map((request) => request.status)).toEqual([503, 200])
    expect(deploys().map((request) => request.path)).toEqual([expect.stringContaining(uid), expect.stringContaining(uid)])
    // The same workload, not a second one on rtx6000b-small-b (which had capacity all along).
    expect(creates()).toHaveLength(1)
    expect(sim.workloads.size).toBe(1)
    expect(doc.data.leftovers).toEqual([])
    expect(doc.warnings.join(' ')).toContain('waiting to deploy it again')
    expect(doc.data.capacity_wait_s).toBeGreaterThan(0)
    await expectNothingBilling()
  })

  it('--count 2 --min 1 creates VMs as capacity appears; the first runs while the second waits', async () => {
    await setup()
    // One unit now; the second two seconds after the first VM runs (not at a fixed time: the CLI's start-up varies).
    sim.scheduleCapacity([{atMs: 0, available: 1, offer: 'rtx6000b-small'}])
    void waitFor(() => [...sim.workloads.values()].some((workload) => sim.current(workload.uid)?.status === 'running'), 60_000).then(() =>
      sim.scheduleCapacity([{atMs: 2000, available: 1, offer: 'rtx6000b-small'}]),
    )
    let mostRegistered = 0
    let firstWhenSecondCreated: string | undefined
    const sampler = setInterval(() => {
      mostRegistered = Math.max(mostRegistered, registered().length)
      const [first, second] = [...sim.workloads.values()]
      if (second && first && firstWhenSecondCreated === undefined) firstWhenSecondCreated = sim.current(first.uid)?.status
    }, 20)
    let result: CliResult
    try {
      result = await targon([...UP, '--no-bootstrap', '--count', '2', '--min', '1', '--wait', '1m', '--json'])
    } finally {
      clearInterval(sampler)
    }

    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms).toHaveLength(2)
    expect(doc.data.failed).toEqual([])
    expect(doc.data.capacity_wait_s).toBeGreaterThan(1)
    expect(firstWhenSecondCreated).toBe('running')
    expect(mostRegistered).toBeLessThanOrEqual(2)
    expect(creates()).toHaveLength(2)
    expect(inventoryReads().filter((read) => read.authorized)).toEqual([])
    await expectNothingBilling()
  })

  it('when the wait runs out, --min keeps what came up, and without it the fleet is rolled back', async () => {
    await setup()
    sim.scheduleCapacity([{atMs: 0, available: 1, offer: 'rtx6000b-small'}])
    const kept = await targon([...UP, '--no-bootstrap', '--count', '2', '--min', '1', '--wait', '2s', '--json'])
    expect(kept.code, kept.stdout + kept.stderr).toBe(0)
    const doc = parseJson(kept)
    expect(doc.data.vms).toHaveLength(1)
    expect(doc.data.failed).toEqual([{error: expect.objectContaining({code: 'NO_CAPACITY'}), name: null, uid: null}])
    expect(sim.billing().map((workload) => workload.uid)).toEqual([doc.data.vms[0].uid])
    expect(creates()).toHaveLength(1)
    await expectNothingBilling()

    // The deleted VM gave its unit back: one more is available, the second never comes.
    const allOrNothing = await targon([...UP, '--no-bootstrap', '--count', '2', '--wait', '2s', '--json'])
    expect(allOrNothing.code, allOrNothing.stdout + allOrNothing.stderr).toBe(11)
    expect(parseJson(allOrNothing).error.code).toBe('PARTIAL_FAILURE')
    expect(registered()).toEqual([])
    expect(sim.billing()).toEqual([])
    await expectNothingBilling()
  })

  it('a VM that fails while others wait is deleted at once, and the wait goes on while --min can still be met', async () => {
    let failing: string | undefined
    await setup({
      provisioning: (workload) => {
        failing ??= workload.uid
        return workload.uid === failing ? 'error' : 'normal'
      },
    })
    sim.scheduleCapacity([
      {atMs: 0, available: 1, offer: 'rtx6000b-small'},
      {atMs: 8000, available: 1, offer: 'rtx6000b-small'},
    ])
    const result = await targon([...UP, '--no-bootstrap', '--count', '2', '--min', '1', '--wait', '1m', '--json'])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms).toHaveLength(1)
    expect(doc.data.failed).toEqual([expect.objectContaining({error: expect.objectContaining({code: 'API_ERROR'}), uid: failing})])
    // The failed VM was deleted while the other waited (not when the run ended), and the unit it gave back was rented.
    const deleted = sim.requests('DELETE', `/workloads/${failing}`).at(-1)?.at ?? Infinity
    const secondCreated = creates()[1]?.at ?? 0
    expect(deleted).toBeLessThan(secondCreated)
    expect(doc.data.capacity_wait_s).toBeLessThan(7)
    await expectNothingBilling()
  })

  it('stops waiting once failures leave too few VMs for --count, instead of waiting until --wait runs out', async () => {
    await setup({provisioning: 'error'})
    sim.scheduleCapacity([{atMs: 0, available: 1, offer: 'rtx6000b-small'}])
    const started = Date.now()
    const result = await targon([...UP, '--no-bootstrap', '--count', '2', '--wait', '10m', '--json'])
    expect(Date.now() - started).toBeLessThan(60_000)
    expect(result.code, result.stdout + result.stderr).toBe(11)
    const doc = parseJson(result)
    expect(doc.error.code).toBe('PARTIAL_FAILURE')
    expect(doc.data.failed.map((failure: {error: {code: string}}) => failure.error.code).sort()).toEqual(['API_ERROR', 'NO_CAPACITY'])
    // The failed VM's unit is free again once Targon marks it failed: the waiting VM may create on it before the run
    // hears of the failure, and is then rolled back with the run. Never more than one create each.
    expect(creates().length).toBeLessThanOrEqual(2)
    await expectNothingBilling()
  })

  it('a VM whose create fails gives its unit of capacity back to a VM that waits', async () => {
    await setup()
    sim.scheduleCapacity([{atMs: 0, available: 2, offer: 'rtx6000b-small'}])
    sim.inject({body: JSON.stringify({error: 'bad request'}), method: 'POST', path: /\/workloads$/, status: 400, times: 1})
    const result = await targon([...UP, '--no-bootstrap', '--count', '3', '--min', '2', '--wait', '20s', '--json'])
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms).toHaveLength(2)
    expect(doc.data.failed).toHaveLength(1)
    // The third VM did not wait until --wait ran out for a unit the failed create had taken.
    expect(doc.data.capacity_wait_s).toBeLessThan(15)
    await expectNothingBilling()
  })

  for (const variant of CONFIG_FILE_VARIANTS)
    it(`exits 130 on Ctrl-C during the wait, having created nothing (${variant.label})`, async () => {
      await setup()
      variant.prepare(configDir)
      sim.scheduleCapacity([soldOut()])
      const result = await targon([...UP, '--no-bootstrap', '--wait', '1m', '--json'], {
        onSpawn: signalWhen(() => inventoryReads().length >= 3),
      })
      expect(result.code, result.stdout + result.stderr).toBe(130)
      expect(parseJson(result).error).toMatchObject({code: 'INTERRUPTED', exit_code: 130})
      expect(creates()).toEqual([])
      expect(sim.workloads.size).toBe(0)
      await expectNothingBilling()
    })

  for (const variant of CONFIG_FILE_VARIANTS)
    it(`exits 130 on Ctrl-C while a refused workload waits, deleting it per the failure policy (${variant.label})`, async () => {
      await setup()
      variant.prepare(configDir)
      sim.inject({delayMs: 800, method: 'POST', path: '/deploy', times: 1})
      const result = await targon([...UP, '--no-bootstrap', '--wait', '1m', '--json'], {
        onSpawn: (child) => {
          void waitFor(() => deploys().length > 0).then(() => sim.scheduleCapacity([soldOut()]))
          signalWhen(() => deploys().length > 0 && inventoryReads().at(-1)!.at > deploys()[0]!.at)(child)
        },
      })
      expect(result.code, result.stdout + result.stderr).toBe(130)
      const doc = parseJson(result)
      expect(doc.error.code).toBe('INTERRUPTED')
      // Targon refuses to delete a registered workload: it is named as a leftover, and it does not bill.
      expect(sim.workloads.size).toBe(1)
      const [uid] = sim.workloads.keys()
      expect(doc.data.cleanup).toMatchObject({attempted: true, survivors: []})
      expect(doc.data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual([uid])
      expect(sim.requests('DELETE', `/workloads/${uid}`).length).toBeGreaterThan(0)
      expect(sim.billing()).toEqual([])
      await expectNothingBilling()
    })

  it('refuses a bad --wait with one line and exit 2, before any request', async () => {
    await setup()
    for (const [value, problem] of [
      ['5', 'has no unit'],
      ['soon', 'is not a duration'],
      ['0s', 'is out of range'],
    ] as const) {
      const result = await targon([...UP, '--wait', value])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
      expect(result.stderr).toContain(`--wait "${value}" ${problem}`)
    }

    expect(sim.log).toEqual([])
  })
})
