/**
 * What targon dstack scale decides (workflows/dstack-scale/plan.ts), from runs as the dstack double answers runs/list
 * through the client, on a fake clock: which runs wait for capacity, and how many VMs to rent for them.
 */
import {describe, expect, it} from 'vitest'

import {SUBMITTED_GRACE_MS, decideRent, hostState, waitingRuns} from '../../src/lib/workflows/dstack-scale/plan.js'
import {useDstackClient} from '../helpers/dstack.js'

const FLEET = 'targon-train'

const dstackClient = useDstackClient()

async function setup() {
  const {client, clock, dstack} = await dstackClient.start()
  const waiting = async () => waitingRuns(await client.listActiveRuns(), FLEET, clock.now())
  return {client, clock, dstack, waiting}
}

describe('dstack scale: which runs wait for capacity', () => {
  it('counts a run retrying after no capacity at once, and a submitted one only after the grace', async () => {
    const {clock, dstack, waiting} = await setup()
    dstack.submitRun({name: 'retrying'})
    dstack.submitRun({name: 'fresh', state: 'submitted'})
    expect((await waiting()).map((run) => [run.name, run.status, run.why])).toEqual([['retrying', 'pending', 'no-capacity']])

    await clock.sleep(SUBMITTED_GRACE_MS)
    expect((await waiting()).map((run) => [run.name, run.why]).sort()).toEqual([
      ['fresh', 'submitted'],
      ['retrying', 'no-capacity'],
    ])
    // Submitted again after no capacity: retrying, so waiting at once, whatever the grace.
    dstack.resubmit('retrying')
    expect((await waiting()).find((run) => run.name === 'retrying')).toMatchObject({status: 'submitted', why: 'no-capacity'})
  })

  it('leaves out runs for another fleet, finished runs, runs without retry that failed, and other pending runs', async () => {
    const {client, clock, dstack, waiting} = await setup()
    dstack.submitRun({fleets: ['other'], name: 'elsewhere'})
    dstack.submitRun({fleets: [FLEET], name: 'ours'})
    dstack.submitRun({name: 'no-retry', retrySeconds: null})
    dstack.submitRun({name: 'done'})
    dstack.finishRun('done')
    const runs = await client.listActiveRuns()
    expect(runs.map((run) => run.run_spec.run_name).sort()).toEqual(['elsewhere', 'ours'])
    expect((await waiting()).map((run) => run.name)).toEqual(['ours'])
    // Pending for its schedule (a cron run), not for capacity; running: placed.
    const [ours] = runs.filter((run) => run.run_spec.run_name === 'ours')
    if (!ours) throw new Error('run ours expected')
    const scheduled = {...ours, latest_job_submission: null, status: 'pending', status_message: 'pending'}
    const running = {...ours, status: 'running', status_message: 'running'}
    expect(waitingRuns([scheduled, running], FLEET, clock.now())).toEqual([])
  })
})

describe('dstack scale: how many VMs to rent', () => {
  it('rents one per waiting run, less the hosts idle or on their way, never above --max', () => {
    expect(decideRent(0, [], 4, 'train')).toMatchObject({reason: 'no-waiting-runs', rent: 0})
    expect(decideRent(1, [], 4, 'train')).toEqual({reason: null, rent: 1, why: null})
    expect(decideRent(3, ['busy'], 4, 'train')).toMatchObject({reason: null, rent: 3})
    expect(decideRent(3, ['busy', 'busy'], 4, 'train')).toMatchObject({reason: null, rent: 2})
    expect(decideRent(2, ['busy', 'coming'], 4, 'train')).toMatchObject({reason: null, rent: 1})
    expect(decideRent(1, ['coming'], 4, 'train')).toMatchObject({reason: 'hosts-coming', rent: 0})
    expect(decideRent(2, ['busy', 'idle'], 4, 'train')).toMatchObject({reason: 'idle-host', rent: 0})
    expect(decideRent(5, ['busy', 'busy', 'busy', 'busy'], 4, 'train')).toMatchObject({reason: 'at-max', rent: 0})
    expect(decideRent(5, ['busy', 'busy', 'busy'], 4, 'train')).toMatchObject({reason: null, rent: 1})
  })

  it('reads a host as busy, idle or on its way from its dstack instances', () => {
    const instance = (status: string, busy = 0) => ({busy_blocks: busy, hostname: 'h', instance_num: 0, status})
    expect(hostState([])).toBe('coming')
    expect(hostState([instance('pending')])).toBe('coming')
    expect(hostState([instance('idle')])).toBe('idle')
    expect(hostState([instance('busy', 1)])).toBe('busy')
    expect(hostState([instance('idle', 1)])).toBe('busy')
  })
})
