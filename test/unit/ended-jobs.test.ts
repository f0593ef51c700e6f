/** Reading the jobs a deletion ends: bounded in time, whatever a VM does, and never in the way of the deletion. */
import {describe, expect, it} from 'vitest'

import type {KnownVm} from '../../src/lib/domain/fleet/fleet-read.js'
import {readRunningJobs} from '../../src/lib/workflows/down/ended-jobs.js'
import {fakeClock} from '../helpers/fake-clock.js'

const vm = (uid: string, status = 'running') => ({name: `tcli-${uid}`, status, uid}) as KnownVm
const job = {command: 'python train.py', id: 'j-20261202-030527-a1b2c3'}

function run(signal = new AbortController().signal) {
  const warnings: string[] = []
  return {clock: fakeClock(), historyBudget: {left: 10}, signal, warn: (message: string) => warnings.push(message), warnings}
}

describe('readRunningJobs', () => {
  it('gives up on a VM that connects and then never answers, within its bound; the others are read, and it is said once', async () => {
    const context = run()
    const started = performance.now()
    // A reader that ignores the signal too: the bound does not rely on it stopping.
    const jobs = await readRunningJobs(context, [vm('hangs'), vm('answers'), vm('stopped', 'stopped')], {
      boundMs: 200,
      parallel: 4,
      runningJobs: async (each) => (each.uid === 'hangs' ? new Promise<never>(() => undefined) : [job]),
    })
    expect(performance.now() - started).toBeLessThan(2000)
    expect(jobs).toEqual(
      new Map([
        ['hangs', null],
        ['answers', [job]],
      ]),
    )
    expect(context.warnings).toEqual([
      "the jobs of 1 VM could not be read (tcli-hangs: not read in time); each is deleted all the same, and its result's ended_jobs is null",
    ])
  })

  it('stops at an interrupt at once, without a warning', async () => {
    const controller = new AbortController()
    const context = run(controller.signal)
    setTimeout(() => controller.abort(), 20)
    const jobs = await readRunningJobs(context, [vm('hangs')], {
      boundMs: 60_000,
      parallel: 1,
      runningJobs: async () => new Promise<never>(() => undefined),
    })
    expect(jobs).toEqual(new Map([['hangs', null]]))
    expect(context.warnings).toEqual([])
  })

  it('says why a VM could not be read, once per reason', async () => {
    const context = run()
    const jobs = await readRunningJobs(context, [vm('a'), vm('b')], {
      parallel: 2,
      runningJobs: async () => {
        throw new Error('no project key in this config directory')
      },
    })
    expect(jobs).toEqual(
      new Map([
        ['a', null],
        ['b', null],
      ]),
    )
    expect(context.warnings).toEqual([
      "the jobs of 2 VMs could not be read (tcli-a, tcli-b: unexpected error: no project key in this config directory); each is deleted all the same, and its result's ended_jobs is null",
    ])
  })
})
