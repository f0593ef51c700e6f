/**
 * The up workflow in process, against the Targon simulator on loopback (no subprocess, any user): the failure
 * policies (all-or-nothing, --min, roll-back on a signal, a refusal for the whole org) and the event stream that the
 * progress display and the --json phase record follow. The run, its client and the simulator share one fake clock:
 * boots, waits and back-offs take no real time.
 */
import {describe, expect, it} from 'vitest'

import type {RunEvent} from '../../src/lib/adapters/events/schema.js'
import type {UpResult} from '../../src/lib/workflows/up/schema.js'
import {TargonError} from '../../src/lib/core/errors.js'
import {RunEvents} from '../../src/lib/adapters/events/run-events.js'
import {DEFAULT_IMAGE} from '../../src/lib/adapters/settings/table.js'
import type {TargonClient} from '../../src/lib/adapters/targon/client.js'
import {runUp} from '../../src/lib/workflows/up/up.js'
import {newHistoryBudget} from '../../src/lib/domain/deletion/history.js'
import type {UpAsk} from '../../src/lib/workflows/up/provisioning.js'
import {tempDir} from '../helpers/cli.js'
import {fakeClock} from '../helpers/fake-clock.js'
import {useSimulatorClient} from '../helpers/simulator.js'
import type {SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'

const simulated = useSimulatorClient()
let sim: TargonSimulator | undefined
let client: TargonClient | undefined
let clock = fakeClock()

async function simulator(options: SimulatorOptions = {}): Promise<TargonSimulator> {
  clock = fakeClock(Date.parse('2026-06-01T00:00:00Z'))
  ;({client, sim} = await simulated.start({clock, ...options}))
  return sim
}

/**
 * A run of `targon up rtx6000b-small --max-price 1.8 --no-bootstrap` on the simulator started last, with what it
 * announced; `listen` hears each event as it happens.
 */
async function up(ask: Partial<UpAsk> = {}, listen?: (event: RunEvent) => void, signal = new AbortController().signal) {
  const events = new RunEvents('up', clock)
  const seen: RunEvent[] = []
  events.on((event) => seen.push(event))
  if (listen) events.on(listen)
  const warnings: string[] = []
  const outcome = await runUp(client as TargonClient, {
    ask: {
      bootstrap: null,
      capacity: null,
      configDir: tempDir('targon-unit-up-'),
      count: 1,
      fleet: 'unit',
      image: DEFAULT_IMAGE,
      maxPrice: 1.8,
      onFailure: 'auto',
      owner: null,
      reconcileMs: 3000,
      resource: 'rtx6000b-small',
      timeoutMs: 60_000,
      ...ask,
    },
    run: {clock, events, historyBudget: newHistoryBudget(), org: async () => 'acme', warn: (message) => warnings.push(message)},
    signal,
    track: () => {},
  }).then(
    (result: UpResult) => ({error: undefined, result}),
    (error: unknown) => ({error: error as TargonError, result: undefined}),
  )
  return {...outcome, events: seen, sim: sim as TargonSimulator, warnings}
}

/** The second VM to deploy goes to error while booting. */
const secondFails: SimulatorOptions = {provisioning: (workload) => (workload.deployIndex === 1 ? 'error' : 'normal')}

const phaseEnds = (events: RunEvent[], index: number) =>
  events.filter((event) => event.type === 'phase' && event.vm?.index === index && event.status !== 'started').map((event) => event.status)

describe('up: the failure policies', () => {
  it('all or nothing: one VM failing rolls back the others, and the run fails with PARTIAL_FAILURE', async () => {
    const {error, events, sim} = (await simulator(secondFails), await up({count: 3}))
    expect(error).toBeInstanceOf(TargonError)
    expect(error?.code).toBe('PARTIAL_FAILURE')
    expect(sim.billing()).toEqual([])
    expect(sim.workloads.size).toBe(3)
    // Each VM was rolled back, and says so.
    const rolledBack = events.filter((event) => event.type === 'rollback' && event.status === 'done').map((event) => event.vm?.uid)
    expect(rolledBack.sort()).toEqual([...sim.workloads.keys()].sort())
    expect((error?.data as UpResult).failed).toHaveLength(1)
  })

  it('--min keeps the VMs that came up, and rolls back only the one that failed', async () => {
    const {events, result, sim} = (await simulator(secondFails), await up({count: 3, min: 2}))
    expect(result?.vms).toHaveLength(2)
    expect(result?.failed).toHaveLength(1)
    expect(
      sim
        .billing()
        .map((workload) => workload.uid)
        .sort(),
    ).toEqual(result?.vms.map((vm) => vm.uid).sort())
    expect(events.filter((event) => event.type === 'rollback' && event.status === 'done')).toHaveLength(1)
    // The kept VMs' phases are recorded from the events, in order.
    for (const vm of result?.vms ?? []) expect(vm.phases.map((phase) => phase.name)).toEqual(['register', 'deploy', 'wait-running'])
  })

  it('a signal during wait-running rolls back what the run created and fails as INTERRUPTED', async () => {
    const controller = new AbortController()
    const interrupt = (event: RunEvent) => {
      if (event.type === 'phase' && event.phase === 'wait-running' && event.status === 'started')
        controller.abort(new TargonError('INTERRUPTED', 'interrupted by SIGINT', {signal: 'SIGINT'}))
    }

    await simulator({bootDelayMs: 2000})
    const {error, events, sim} = await up({count: 2}, interrupt, controller.signal)
    expect(error?.code).toBe('INTERRUPTED')
    expect(sim.workloads.size).toBeGreaterThan(0)
    // Every workload the run made was rolled back, and the stream says so.
    const rolledBack = events.filter((event) => event.type === 'rollback' && event.status === 'done').map((event) => event.vm?.uid)
    expect(rolledBack.sort()).toEqual([...sim.workloads.keys()].sort())
    expect(sim.billing()).toEqual([])
    expect(sim.live().filter((workload) => workload.status !== 'registered')).toEqual([])
  })

  it('a quota refusal for the whole org stops the run: no other VM is created, and the error is the refusal', async () => {
    const {error, sim} = (await simulator({workloadLimit: 1}), await up({count: 3}))
    expect(error?.code).toBe('QUOTA_EXCEEDED')
    // The one workload the quota allowed, then deleted again: nothing else was made.
    expect(sim.workloads.size).toBe(1)
    expect(sim.billing()).toEqual([])
  })
})

describe('up: the event stream', () => {
  it('tells each phase of each VM in order, and the VM by name once it has one', async () => {
    await simulator()
    const {events, result} = await up({count: 2})
    expect(result?.vms).toHaveLength(2)
    for (const index of [1, 2]) {
      expect(phaseEnds(events, index)).toEqual(['done', 'done', 'done'])
      const own = events.filter((event) => event.vm?.index === index)
      expect(own[0]).toMatchObject({phase: 'register', status: 'started', vm: {name: null, uid: null}})
      expect(own.at(-1)?.vm?.name).toBe(result?.vms[index - 1]?.name)
    }
  })

  it('an adopted VM skips the phases it is already past', async () => {
    await simulator()
    const first = await up({label: 'keep'})
    const {events, result: adopted} = await up({label: 'keep'})
    expect(adopted?.vms[0]?.uid).toBe(first.result?.vms[0]?.uid)
    expect(phaseEnds(events, 1)).toEqual(['skipped', 'skipped', 'skipped'])
  })
})
