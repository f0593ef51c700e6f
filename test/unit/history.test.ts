import {existsSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

import {describe, expect, it} from 'vitest'

import {HISTORY_LIMITS, classifyByHistory, readHistory, tombstoneSince, newHistoryBudget} from '../../src/lib/domain/deletion/history.js'
import {readFleet} from '../../src/lib/domain/fleet/fleet-read.js'
import {recordFleetRead} from '../../src/lib/domain/ledger/ledger.js'
import {LocalState} from '../../src/lib/adapters/state/local-state.js'
import {tempDir} from '../helpers/cli.js'
import {useSimulatorClient} from '../helpers/simulator.js'
import type {SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'

const ORG = 'acme'
const simulator = useSimulatorClient()

/** A fake clock: time moves only when a test says so. */
function fakeClock(start = Date.now()) {
  const clock = {at: start, now: () => clock.at}
  return clock
}

/** A VM that ran and was deleted behind this directory's back: Targon's `error` tombstone, listed. */
function tombstone(sim: TargonSimulator): string {
  const workload = sim.addWorkload({deployedAt: Date.now() - 3_600_000, name: 'tcli-default-gone', status: 'running'})
  sim.deleteExternally(workload.uid)
  expect(sim.current(workload.uid)?.status).toBe('error')
  return workload.uid
}

/** A VM that crashed: an `error` record that bills. */
function crashed(sim: TargonSimulator, name = 'tcli-default-crash'): string {
  const workload = sim.addWorkload({deployedAt: Date.now() - 3_600_000, name, status: 'running'})
  sim.crash(workload.uid)
  return workload.uid
}

async function start(options: SimulatorOptions = {}) {
  return simulator.start({tombstoneBounceMs: 0, ...options})
}

const historyReads = (sim: TargonSimulator) => sim.requests('GET', '/events').length

describe('reading a workload history', () => {
  it('finds the delete, whoever sent it, and its time ends the billing', async () => {
    const {sim, client} = await start()
    const uid = tombstone(sim)
    const deletedAt = sim.current(uid)?.deletedAt as number
    expect(await readHistory(client, ORG, uid, Date.now())).toEqual({at: deletedAt, kind: 'deleted'})
  })

  it('stops reading at the deleted event when the pages go newest first, and reads oldest-first pages to the end', async () => {
    const newest = await start({historyOrder: 'newest-first', historyPageSize: 1, tombstoneBounceMs: 50})
    const workload = newest.sim.addWorkload({deployedAt: Date.now() - 3_600_000, name: 'tcli-default-gone', status: 'running'})
    newest.sim.deleteExternally(workload.uid)
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(newest.sim.current(workload.uid)?.status).toBe('error')
    // error, then deleted 50 ms before it: the running page is never read.
    expect((await readHistory(newest.client, ORG, workload.uid, Date.now())).kind).toBe('deleted')
    expect(historyReads(newest.sim)).toBe(2)
    const oldest = await start({historyOrder: 'oldest-first', historyPageSize: 1})
    // running, deleted, error: a later page could undo the delete.
    expect((await readHistory(oldest.client, ORG, tombstone(oldest.sim), Date.now())).kind).toBe('deleted')
    expect(historyReads(oldest.sim)).toBe(3)
  })

  it('takes a crash for a crash only after reading the whole history', async () => {
    const {sim, client} = await start({historyPageSize: 1})
    const uid = crashed(sim)
    expect(await readHistory(client, ORG, uid, Date.now())).toEqual({kind: 'crashed'})
    expect(historyReads(sim)).toBe(2)
  })

  it('a delete that a later running event undoes is no tombstone', async () => {
    const {sim, client} = await start()
    const uid = tombstone(sim)
    sim.addHistory(uid, {created_at: new Date(Date.now() + 1000).toISOString(), new_status: 'running'})
    expect(await readHistory(client, ORG, uid, Date.now())).toEqual({kind: 'crashed'})
    expect(
      tombstoneSince([
        {at: 1, status: 'deleted'},
        {at: 2, status: 'error'},
      ]),
    ).toBe(1)
    expect(
      tombstoneSince([
        {at: 1, status: 'deleted'},
        {at: 2, status: 'running'},
      ]),
    ).toBeUndefined()
    expect(
      tombstoneSince([
        {at: 3, status: 'deleted'},
        {at: 2, status: 'running'},
      ]),
    ).toBe(3)
  })

  it('leaves the record unknown when the endpoint is missing, empty or hostile', async () => {
    for (const history of ['missing', 'empty', 'hostile'] as const) {
      const {sim, client} = await start({history})
      const answer = await readHistory(client, ORG, tombstone(sim), Date.now())
      expect(answer.kind, history).toBe('unknown')
    }
  })

  it('takes no delete from a history with an event that fails the checks: it may have undone it', async () => {
    const {sim, client} = await start()
    const uid = tombstone(sim)
    sim.workloads.get(uid)!.events!.push({created_at: 'not a time', event_type: 'X', message: '', new_status: 'running'})
    expect(await readHistory(client, ORG, uid, Date.now())).toMatchObject({kind: 'unknown', why: '1 unreadable event(s)'})
  })

  it('skips an event without new_status (it changed no status): the delete still decides', async () => {
    const {sim, client} = await start()
    const uid = tombstone(sim)
    const later = new Date(Date.now() + 1000).toISOString()
    sim.workloads.get(uid)!.events!.push({created_at: later, event_type: 'LOG', message: 'note', new_status: null as unknown as string})
    sim.workloads.get(uid)!.events!.push({created_at: later, event_type: 'LOG', message: 'note'} as never)
    expect(await readHistory(client, ORG, uid, Date.now())).toMatchObject({kind: 'deleted'})
  })

  it('reads a history page to 1 MiB at most: a larger one leaves the record unknown', async () => {
    const {sim, client} = await start()
    const uid = tombstone(sim)
    const padding = 'x'.repeat(1024 * 1024)
    sim.inject({body: JSON.stringify({items: [], next_cursor: null, padding}), path: '/events', status: 200})
    expect(await readHistory(client, ORG, uid, Date.now())).toMatchObject({kind: 'unknown', why: expect.stringMatching(/BAD_RESPONSE/)})
  })

  it('reads a sparse history (only new_status and created_at)', async () => {
    const {sim, client} = await start({history: 'sparse'})
    expect((await readHistory(client, ORG, tombstone(sim), Date.now())).kind).toBe('deleted')
  })

  it(`gives up after ${HISTORY_LIMITS.pages} pages without a decisive event`, async () => {
    const {sim, client} = await start({historyPageSize: 1})
    const uid = crashed(sim)
    for (let index = 0; index < 6; index++)
      sim.addHistory(uid, {created_at: new Date(Date.now() - 60_000 + index).toISOString(), new_status: 'running'})
    expect(await readHistory(client, ORG, uid, Date.now())).toMatchObject({kind: 'unknown'})
    expect(historyReads(sim)).toBe(HISTORY_LIMITS.pages)
  })
})

describe('classifying error records for every reader', () => {
  it('keeps a delete for good, and asks about a crash again only after an hour', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const gone = tombstone(sim)
    const crash = crashed(sim)
    const clock = fakeClock()
    const classify = () => classifyByHistory(client, state, ORG, [gone, crash], {budget: {left: 100}, clock})
    const first = await classify()
    expect(first.get(gone)?.kind).toBe('deleted')
    expect(first.get(crash)?.kind).toBe('crashed')
    expect(historyReads(sim)).toBe(2)

    clock.at += 59 * 60_000
    expect((await classify()).get(crash)?.kind).toBe('crashed')
    expect(historyReads(sim)).toBe(2)

    clock.at += 2 * 60_000
    await classify()
    expect(sim.requests('GET', `/workloads/${crash}/events`)).toHaveLength(2)
    expect(sim.requests('GET', `/workloads/${gone}/events`)).toHaveLength(1)
  })

  it('asks again about an unknown record after an hour, not before', async () => {
    const {sim, client} = await start({history: 'missing'})
    const state = new LocalState(tempDir('targon-config-'))
    const uid = tombstone(sim)
    const clock = fakeClock()
    const classify = () => classifyByHistory(client, state, ORG, [uid], {budget: {left: 100}, clock})
    expect((await classify()).get(uid)?.kind).toBe('unknown')
    clock.at += 30 * 60_000
    await classify()
    expect(historyReads(sim)).toBe(1)
    clock.at += 31 * 60_000
    await classify()
    expect(historyReads(sim)).toBe(2)
  })

  it('reads at most its budget of histories, and leaves the rest unknown', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const uids = [tombstone(sim), tombstone(sim), tombstone(sim)]
    const answers = await classifyByHistory(client, state, ORG, uids, {budget: {left: 2}, clock: fakeClock()})
    expect([...answers.values()].map((answer) => answer.kind).sort()).toEqual(['deleted', 'deleted', 'unknown'])
    expect(historyReads(sim)).toBe(2)

    // Each run starts with the whole ration, whatever an earlier run spent.
    expect(newHistoryBudget()).toEqual({left: HISTORY_LIMITS.readsPerRun, msLeft: HISTORY_LIMITS.runMs})
  })

  it('spends at most the run time on history reads: a hanging endpoint is abandoned, and a spent run asks nothing', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const uids = [tombstone(sim), tombstone(sim)]
    sim.inject({delayMs: 60_000, path: '/events'})
    const budget = {left: 100, msLeft: 300}
    const answers = await classifyByHistory(client, state, ORG, uids, {budget, clock: fakeClock()})
    expect([...answers.values()].map((answer) => answer.kind)).toEqual(['unknown', 'unknown'])
    expect(budget.msLeft).toBeLessThanOrEqual(0)
    const asked = historyReads(sim)
    const again = await classifyByHistory(client, state, ORG, [tombstone(sim)], {budget, clock: fakeClock()})
    expect([...again.values()]).toMatchObject([{kind: 'unknown', why: expect.stringMatching(/time for history reads is spent/)}])
    expect(historyReads(sim)).toBe(asked)
  })

  it('keeps a verdict while its record is listed, and drops it 30 days after it left the listing', () => {
    const state = new LocalState(tempDir('targon-config-'))
    const asked = Date.now()
    state.writeHistoryVerdict(ORG, {asked_at: new Date(asked).toISOString(), deleted_at: null, uid: 'wrk-1', verdict: 'deleted'})
    state.pruneHistoryVerdicts(ORG, new Set(), asked + 29 * 86_400_000)
    state.pruneHistoryVerdicts(ORG, new Set(['wrk-1']), asked + 31 * 86_400_000)
    expect(state.readHistoryVerdict(ORG, 'wrk-1')?.verdict).toBe('deleted')
    state.pruneHistoryVerdicts(ORG, new Set(), asked + 31 * 86_400_000)
    expect(state.readHistoryVerdict(ORG, 'wrk-1')).toBeUndefined()
  })

  it('counts the 30 days from when the record was last listed, not from when the history was asked', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const uid = tombstone(sim)
    const clock = fakeClock()
    const asked = clock.at
    const classify = () => classifyByHistory(client, state, ORG, [uid], {budget: {left: 100}, clock})
    await classify()
    // Listed (and classified from the kept verdict) for 40 days, then gone from the listing.
    clock.at = asked + 40 * 86_400_000
    expect((await classify()).get(uid)?.kind).toBe('deleted')
    expect(historyReads(sim)).toBe(1)
    state.pruneHistoryVerdicts(ORG, new Set(), asked + 60 * 86_400_000)
    expect(state.readHistoryVerdict(ORG, uid)?.verdict).toBe('deleted')
    state.pruneHistoryVerdicts(ORG, new Set(), asked + 71 * 86_400_000)
    expect(state.readHistoryVerdict(ORG, uid)).toBeUndefined()
  })

  it('drops a kept delete once the record is listed live again: a later error of it is asked about anew', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const uid = tombstone(sim)
    const read = () => readFleet(client, ORG, state, {clock: fakeClock(), historyBudget: {left: 100}})
    // Each listing as a workflow makes it: read, then recorded (which drops the verdicts it outdated).
    const view = async () => {
      const listed = await read()
      recordFleetRead(state, ORG, listed, fakeClock())
      return listed
    }
    expect((await view()).vms[0]).toMatchObject({gone: true, history: 'deleted'})
    sim.powerOff(uid, 'stopped')
    sim.addHistory(uid, {created_at: new Date(Date.now() + 1000).toISOString(), new_status: 'stopped'})
    const live = await read()
    expect(live.vms[0]).toMatchObject({billing: true, gone: false, status: 'stopped'})
    // The fleet read only reads: the verdict goes when the listing is recorded.
    expect(state.readHistoryVerdict(ORG, uid)?.verdict).toBe('deleted')
    recordFleetRead(state, ORG, live, fakeClock())
    expect(state.readHistoryVerdict(ORG, uid)).toBeUndefined()
    sim.crash(uid)
    sim.addHistory(uid, {created_at: new Date(Date.now() + 2000).toISOString(), new_status: 'error'})
    expect((await view()).vms[0]).toMatchObject({billing: true, gone: false, history: 'crashed'})
    expect(historyReads(sim)).toBe(2)
  })

  it('sends no more reads once the API is in trouble', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const uids = Array.from({length: 20}, () => tombstone(sim))
    sim.inject({path: '/events', status: 503})
    const answers = await classifyByHistory(client, state, ORG, uids, {budget: {left: 100}, clock: fakeClock()})
    expect([...answers.values()].every((answer) => answer.kind === 'unknown')).toBe(true)
    // The reads in flight when the first failed, with their retries; none of the rest.
    expect(new Set(sim.requests('GET', '/events').map((request) => request.path)).size).toBeLessThanOrEqual(HISTORY_LIMITS.inFlight)
    // Trouble says nothing of the workloads: no verdict is kept, and the next run asks again.
    for (const uid of uids) expect(state.readHistoryVerdict(ORG, uid)).toBeUndefined()
    sim.clearFaults()
    const again = await classifyByHistory(client, state, ORG, uids.slice(0, 1), {budget: {left: 100}, clock: fakeClock()})
    expect(again.get(uids[0]!)?.kind).toBe('deleted')
  })

  it('makes a tombstone gone and a crash billing in the fleet read, and never asks about what a delete note settles', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    const gone = tombstone(sim)
    const crash = crashed(sim)
    const noted = tombstone(sim)
    state.writeDeleteNote(ORG, {at: new Date().toISOString(), name: null, outcome: 'accepted', uid: noted})
    const view = await readFleet(client, ORG, state, {clock: fakeClock(), historyBudget: {left: 100}})
    const byUid = new Map(view.vms.map((vm) => [vm.uid, vm]))
    expect(byUid.get(gone)).toMatchObject({billing: false, gone: true, history: 'deleted'})
    expect(byUid.get(crash)).toMatchObject({billing: true, billingAssumed: false, gone: false, history: 'crashed'})
    expect(byUid.get(noted)?.history).toBeUndefined()
    expect(sim.requests('GET', `/workloads/${noted}/events`)).toHaveLength(0)
  })

  it('reads the fleet without writing the spend ledger, which recordFleetRead then writes', async () => {
    const {sim, client} = await start()
    const state = new LocalState(tempDir('targon-config-'))
    sim.addWorkload({deployedAt: Date.now() - 3_600_000, name: 'tcli-default-live', status: 'running'})
    const view = await readFleet(client, ORG, state, {clock: fakeClock(), historyBudget: {left: 100}})
    expect(view.listing.sightings.map((sighting) => sighting.uid)).toHaveLength(1)
    expect(existsSync(join(state.dir, 'ledger'))).toBe(false)
    recordFleetRead(state, ORG, view, fakeClock())
    expect(readdirSync(join(state.dir, 'ledger', ORG)).filter((file) => file.endsWith('.ndjson'))).toHaveLength(1)
    expect(view.problems).toEqual([])
  })
})
