/**
 * Which offers up rents and why it fails when it cannot: exit 9 when nothing matching is priced under the cap,
 * whatever its capacity (waiting would not help), exit 10 only when offers under the cap exist and are all sold
 * out; and a fleet never registers more workloads on an offer than it lists available.
 */
import {describe, expect, it} from 'vitest'

import {useFreshFixture} from '../helpers/fixture.js'
import type {CapacityChange, TargonSimulator} from '../simulator/simulator.js'

const fresh = useFreshFixture({env: {TARGON_CAPACITY_POLL_INTERVAL: '0.2'}, inProcess: true})
const {targon} = fresh

/** up --no-bootstrap --json against a fresh simulator whose offers' capacity follows `capacity`. */
async function upWith(args: string[], capacity: CapacityChange[] = []) {
  await fresh.setup({bootDelayMs: 50, capacitySchedule: capacity})
  const result = await targon(['up', ...args, '--no-bootstrap', '--json'])
  return {doc: result.json, result, sim: fresh.sim}
}

const registered = (sim: TargonSimulator) => [...sim.workloads.values()].filter((workload) => workload.status === 'registered')

describe('over the cap or sold out', () => {
  it('exits 9 at once when the only match is over the cap and sold out, even with --wait', async () => {
    for (const extra of [[], ['--wait', '1m']]) {
      const {doc, result, sim} = await upWith(['h200-xlarge', '--max-price', '5', ...extra])
      expect(result.code, result.stdout).toBe(9)
      expect(doc.error.code).toBe('PRICE_CAP_EXCEEDED')
      expect(doc.error.message).toContain('h200-xlarge at 19.92 USD/h, sold out now')
      expect(sim.workloads.size).toBe(0)
      // At once: the run's clock, which skips every wait, skipped none.
      expect(fresh.clock!.now() - Date.now()).toBeLessThan(1000)
      await sim.stop()
    }
  })

  it('exits 10 when offers under the cap exist and all are sold out', async () => {
    const {doc, result, sim} = await upWith(['--gpu', 'h200', '--max-price', '3'], [{atMs: 0, available: 0, offer: 'h200-small'}])
    expect(result.code, result.stdout).toBe(10)
    expect(doc.error.code).toBe('NO_CAPACITY')
    expect(sim.workloads.size).toBe(0)
  })
})

describe('--count against the units an offer lists', () => {
  it('takes the next offer under the cap for what the cheapest cannot hold, leaving nothing registered', async () => {
    const {doc, result, sim} = await upWith(
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
    const all = await upWith(['rtx6000b-small', '--max-price', '1.8', '--count', '2'], one)
    expect(all.result.code, all.result.stdout).toBe(11)
    expect(all.doc.data.failed.map((failure: {error: {code: string}}) => failure.error.code)).toContain('NO_CAPACITY')
    expect(all.sim.requests('POST', /\/workloads$/)).toHaveLength(1)
    expect(registered(all.sim)).toEqual([])
    expect(all.sim.billing()).toEqual([])
    await all.sim.stop()

    const partial = await upWith(['rtx6000b-small', '--max-price', '1.8', '--count', '2', '--min', '1'], one)
    expect(partial.result.code, partial.result.stdout).toBe(0)
    expect(partial.doc.data.vms).toHaveLength(1)
    expect(registered(partial.sim)).toEqual([])
    expect(partial.sim.billing()).toHaveLength(1)
  })
})

describe('the price of a workload', () => {
  it('is cost_per_hour for the cap and every estimate; frozen_cost_per_hour (0.01 on a running VM) is shown apart', async () => {
    // The workload bills 9.98 USD/h while it reports 0.01 as its frozen rate: the cap of 1.80 must refuse it.
    await fresh.setup({frozenCostPerHour: 0.01, priceDrift: 8.29})
    const refused = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(refused.code, refused.stdout).toBe(9)
    expect(refused.json.error.message).toContain('costs 9.98 USD/h, above the cap 1.80 USD/h')
    expect(fresh.sim.billing()).toEqual([])
    await fresh.sim.stop()

    await fresh.setup({frozenCostPerHour: 0.01})
    expect((await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'])).code).toBe(0)
    const status = (await targon(['status', '--json'])).json
    expect(status.data.vms).toMatchObject([{frozen_price_per_hour: 0.01, price_per_hour: 1.69}])
    expect(status.data.totals.price_per_hour).toBe(1.69)
  })
})

describe('up --dry-run', () => {
  it('shows the offer of each VM, the price against the cap, fleet, owner and limits, and sends nothing but reads', async () => {
    const capacity = [{atMs: 0, available: 1, offer: 'rtx6000b-small'}]
    const {doc, result, sim} = await upWith(
      ['--gpu', 'rtx6000b', '--max-price', '3', '--count', '2', '--fleet', 'dry', '--ttl', '6h', '--dry-run'],
      capacity,
    )
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data).toMatchObject({count: 2, dry_run: true, fleet: 'dry', max_price: 3, min: null, org: 'acme', owner: null})
    expect(doc.data.limits).toMatchObject({
      bootstrap: false,
      on_failure: 'auto',
      timeout_seconds: 3600,
      ttl_seconds: 21_600,
      wait_seconds: null,
    })
    // One unit of the cheapest, then the next cheapest with capacity: as a run would take them.
    const offers = doc.data.vms.map((vm: {offer: {resource: string; price_per_hour: number}}) => vm.offer)
    expect(offers[0]).toMatchObject({resource: 'rtx6000b-small', within_cap: true})
    expect(offers[1].resource).not.toBe('rtx6000b-small')
    expect(offers[1].price_per_hour).toBeLessThanOrEqual(3)
    expect(doc.data.price_per_hour).toBeCloseTo(offers[0].price_per_hour + offers[1].price_per_hour, 4)
    // Nothing but reads: no key registered, no project, no workload, no deploy.
    expect(sim.log.filter((request) => request.method !== 'GET')).toEqual([])
    expect(sim.workloads.size).toBe(0)
  })

  it('says in text what it would rent, and fails as the run would when nothing is under the cap (exit 9)', async () => {
    await fresh.setup()
    const alice = {env: {TARGON_OWNER: 'alice'}}
    const text = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--dry-run'], alice)
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout.split('\n')[0]).toMatch(/^VM\s+RESOURCE\s+GPU\s+USD_PER_H\s+CAP$/)
    expect(text.stdout).toMatch(/#1\s+rtx6000b-small\s+1x RTX-PRO-6000B\s+1\.69\s+1\.80/)
    expect(text.stderr).toContain(
      'would rent 1 VM in acme, fleet default, owner alice: 1.69 USD/h in all, under a cap of 1.80 USD/h per VM',
    )
    expect(text.stderr).toContain('dry run: nothing was created, registered or deployed')
    const over = await targon(['up', 'rtx6000b-small', '--max-price', '0.5', '--dry-run', '--json'], alice)
    expect(over.code).toBe(9)
    expect(fresh.sim.log.filter((request) => request.method !== 'GET')).toEqual([])
  })
})
