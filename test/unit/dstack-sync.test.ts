/**
 * The dstack fleet sync (workflows/dstack/fleet-sync.ts and plan.ts) against the dstack double, on a fake clock: what
 * it sends for each kind of change, how many requests it costs, and how it meets dstack's refusals.
 */
import ssh2 from 'ssh2'
import {describe, expect, it} from 'vitest'

import type {DstackHost} from '../../src/lib/adapters/dstack/schemas.js'
import {fleetSpec, syncFleet} from '../../src/lib/workflows/dstack/fleet-sync.js'
import {planChanges} from '../../src/lib/workflows/dstack/plan.js'
import {useDstackClient} from '../helpers/dstack.js'
import type {DstackSimulator, DstackSimulatorOptions} from '../dstack/simulator.js'

const generated = ssh2.utils.generateKeyPairSync('ed25519')
const KEY = {private: generated.private, public: generated.public}
const NAME = 'targon-train'

const dstackClient = useDstackClient()

async function setup(options: DstackSimulatorOptions = {}) {
  const {client, clock, dstack} = await dstackClient.start(options)
  const sync = async (hosts: DstackHost[]) => {
    const before = client.requests
    const outcome = await syncFleet(client, NAME, KEY, hosts, {clock})
    return {...outcome, requests: client.requests - before}
  }
  return {client, clock, dstack, sync}
}

const hosts = (count: number, port = 2200): DstackHost[] =>
  Array.from({length: count}, (_, index) => ({hostname: `vm${index}.10.0.0.${index + 1}.sslip.io`, port: port + index}))
const held = (sim: DstackSimulator) =>
  sim
    .hosts(NAME)
    .map((host) => `${host.hostname}:${host.port}`)
    .sort()
const names = (list: DstackHost[]) => list.map((host) => `${host.hostname}:${host.port}`).sort()

describe('dstack fleet sync', () => {
  it('creates the fleet, then adds and removes with at most 3 requests, and sends no apply when nothing changes', async () => {
    const {dstack: sim, sync} = await setup()
    const all = hosts(16)
    expect(await sync(all)).toMatchObject({action: 'created', requests: 2})
    expect(held(sim)).toEqual(names(all))

    const unchanged = await sync(all)
    expect(unchanged).toMatchObject({action: 'unchanged', added: [], removed: [], requests: 1})
    expect(sim.requests('/apply')).toHaveLength(1)

    const fewer = all.slice(1)
    const removal = await sync(fewer)
    expect(removal).toMatchObject({action: 'updated', removed: [all[0]], requests: 3})
    expect(sim.log.slice(-3).map((entry) => entry.path.split('/').at(-1))).toEqual(['get_plan', 'delete_instances', 'apply'])
    expect(held(sim)).toEqual(names(fewer))

    expect(await sync(all)).toMatchObject({action: 'updated', added: [all[0]], requests: 2})
    expect(held(sim)).toEqual(names(all))
  })

  it('removes, then adds, a host whose port changed (dstack refuses it in place)', async () => {
    const {dstack: sim, sync} = await setup()
    const [first, second] = hosts(2) as [DstackHost, DstackHost]
    await sync([first, second])
    const moved = {...first, port: 2299}
    const outcome = await sync([moved, second])
    expect(outcome).toMatchObject({action: 'updated', added: [moved], requests: 3})
    expect(held(sim)).toEqual(names([moved, second]))
  })

  it('retries an apply that dstack refuses as busy three times, one request each, after growing pauses', async () => {
    const {clock, dstack: sim, sync} = await setup()
    const all = hosts(3)
    await sync(all.slice(0, 2))
    sim.processFleet(NAME, {requests: 3})
    const outcome = await sync(all)
    expect(outcome).toMatchObject({action: 'updated', requests: 2 + 3, retries: 3})
    expect(clock.sleeps).toEqual([1000, 2000, 4000])
    expect(held(sim)).toEqual(names(all))
  })

  it('gives up after its retries, and names the way out', async () => {
    const {dstack: sim, sync} = await setup()
    await sync(hosts(1))
    sim.processFleet(NAME)
    await expect(sync(hosts(2))).rejects.toMatchObject({code: 'API_ERROR', hint: expect.stringContaining('run targon dstack sync again')})
  })

  it('plans again when the fleet changed after the plan', async () => {
    const {client, dstack: sim, sync} = await setup()
    await sync(hosts(1))
    // Another client changes the fleet between this sync's plan and its apply: the first apply is refused.
    let changed = false
    const original = client.apply.bind(client)
    client.apply = async (spec, current) => {
      if (!changed) {
        changed = true
        const other = await client?.getPlan(fleetSpec(NAME, KEY, hosts(3).slice(0, 1).concat({hostname: 'other.example', port: 22})))
        await original(
          fleetSpec(NAME, KEY, hosts(3).slice(0, 1).concat({hostname: 'other.example', port: 22})),
          other?.current_resource ?? null,
        )
      }

      return original(spec, current)
    }

    const outcome = await sync(hosts(2))
    expect(outcome.retries).toBe(1)
    expect(held(sim)).toEqual(names(hosts(2)))
  })

  it('never removes a host with a dstack job, and refuses a host another fleet holds', async () => {
    const {client, clock, dstack: sim, sync} = await setup()
    const [first, second] = hosts(2) as [DstackHost, DstackHost]
    await sync([first, second])
    const run = sim.submitRun({fleets: [NAME]})
    sim.placeRun(run.name, {fleet: NAME, hostname: first.hostname})
    const outcome = await sync([second])
    expect(outcome).toMatchObject({busy: [first], removed: []})
    expect(held(sim)).toEqual(names([first, second]))

    await expect(syncFleet(client, 'targon-other', KEY, [second], {clock})).rejects.toMatchObject({
      code: 'CONFIG',
      hint: expect.stringContaining('another dstack fleet holds that host'),
    })
  })
})

describe('planChanges', () => {
  it('sorts hosts into unchanged, added, re-added, removed and busy', () => {
    const fleet = {
      id: 'f',
      instances: [
        {busy_blocks: 0, hostname: 'a', instance_num: 0, status: 'idle'},
        {busy_blocks: 0, hostname: 'b', instance_num: 1, status: 'idle'},
        {busy_blocks: 1, hostname: 'c', instance_num: 2, status: 'busy'},
        {busy_blocks: 0, hostname: 'd', instance_num: 3, status: 'terminated'},
        {busy_blocks: 0, hostname: 'e', instance_num: 4, status: 'idle'},
      ],
      name: NAME,
      spec: {configuration: {ssh_config: {hosts: ['a', {hostname: 'b', port: 2}, {hostname: 'c'}, 'd', 'e'], port: 1}}},
      status: 'active',
    }
    const changes = planChanges(
      [
        {hostname: 'a', port: 1},
        {hostname: 'b', port: 3},
        {hostname: 'd', port: 1},
        {hostname: 'f', port: 5},
      ],
      fleet,
    )
    expect(changes).toMatchObject({
      added: [{hostname: 'f', port: 5}],
      busy: [{hostname: 'c', port: 1}],
      deleteNums: [4],
      readded: [
        {hostname: 'b', port: 3},
        {hostname: 'd', port: 1},
      ],
      removed: [{hostname: 'e', port: 1}],
      unchanged: [{hostname: 'a', port: 1}],
    })
    expect(changes.interim).toEqual([
      {hostname: 'a', port: 1},
      {hostname: 'c', port: 1},
    ])
    expect(changes.final).toHaveLength(5)
  })
})
