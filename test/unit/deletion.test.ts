import {spawn} from 'node:child_process'
import {chmodSync, existsSync, readFileSync, utimesSync, writeFileSync} from 'node:fs'
import {userInfo} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {HALTED, TRANSITIONAL, judge, meantByName, needsWake} from '../../src/lib/domain/deletion/lifecycle.js'
import {deleteLockPath, withFileLock} from '../../src/lib/adapters/state/lock.js'
import type {DeleteNote} from '../../src/lib/adapters/state/local-state.js'
import {pollUntil} from '../../src/lib/core/wait.js'
import {type DeleteOptions, type DeletionEvent, deleteWorkloads} from '../../src/lib/domain/deletion/delete-workloads.js'
import {LocalState} from '../../src/lib/adapters/state/local-state.js'
import {tempDir} from '../helpers/cli.js'
import {fakeClock} from '../helpers/fake-clock.js'
import {useSimulatorClient} from '../helpers/simulator.js'
import type {SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'

const note = (outcome: DeleteNote['outcome']): DeleteNote => ({at: new Date().toISOString(), name: null, outcome, uid: 'wrk-1'})

describe('what gone and billing mean', () => {
  it('takes 404 and deleted as gone, and an error record as a tombstone only after an accepted DELETE', () => {
    expect(judge('not-found', undefined)).toEqual({billing: false, gone: true})
    expect(judge('deleted', undefined)).toEqual({billing: false, gone: true})
    expect(judge('error', note('accepted'))).toEqual({billing: false, gone: true})
    expect(judge('error', note('refused'))).toEqual({billing: true, gone: false})
    expect(judge('error', undefined)).toEqual({billing: null, gone: false})
  })

  it('bills for everything that may run, and not for a never-deployed workload', () => {
    for (const status of ['provisioning', 'running', 'suspended', 'frozen'])
      expect(judge(status, undefined)).toEqual({billing: true, gone: false})
    expect(judge('registered', note('refused'))).toEqual({billing: false, gone: false})
    // An accepted DELETE does not make a running record gone: the teardown may still be under way.
    expect(judge('running', note('accepted'))).toEqual({billing: true, gone: false})
  })
})

describe('the cross-process lock', () => {
  it('waits for a live holder and takes over from a dead one', async () => {
    const path = join(tempDir(), 'x.lock')
    // A holder that died: a pid that is certainly gone (a child that already exited).
    const child = spawn(process.execPath, ['-e', '0'])
    await new Promise((resolve) => child.on('exit', resolve))
    writeFileSync(path, JSON.stringify({pid: child.pid, started: null}))
    expect(await withFileLock(path, async (waited) => waited, {timeoutMs: 1000})).toBe(false)
    expect(existsSync(path)).toBe(false)

    // A live holder (this process) is never taken over because of age.
    const order: string[] = []
    const first = withFileLock(
      path,
      async () => {
        order.push('first')
        await new Promise((resolve) => setTimeout(resolve, 300))
        order.push('first done')
      },
      {timeoutMs: 5000},
    )
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid)
    const waited = await withFileLock(
      path,
      async (didWait) => {
        order.push('second')
        return didWait
      },
      {timeoutMs: 5000},
    )
    await first
    expect(waited).toBe(true)
    expect(order).toEqual(['first', 'first done', 'second'])
  })

  it('gives up with TIMEOUT when a live holder keeps it', async () => {
    const path = join(tempDir(), 'y.lock')
    writeFileSync(path, JSON.stringify({pid: process.pid, started: null}))
    const clock = fakeClock()
    await expect(withFileLock(path, async () => 1, {clock, timeoutMs: 200})).rejects.toMatchObject({code: 'TIMEOUT'})
    expect(clock.now()).toBe(200)
  })
})

describe('waits', () => {
  it('back off on transient API errors and end only on an answer or at the deadline', async () => {
    const clock = fakeClock()
    let calls = 0
    const rateLimited = new TargonError('API_ERROR', '429', {details: {retry_after_ms: 30}, httpStatus: 429})
    const value = await pollUntil(
      async () => {
        calls++
        if (calls <= 3) throw calls === 2 ? new TargonError('NETWORK_ERROR', 'reset') : rateLimited
        return calls === 5 ? 'running' : undefined
      },
      {clock, deadline: clock.now() + 5000, delayMs: () => 10},
    )
    expect(value).toBe('running')
    expect(calls).toBe(5)
    // The 429's Retry-After is waited out: longer than the usual delay.
    expect(clock.sleeps).toEqual([30, 10, 30, 10])
    const end = clock.now() + 50
    expect(await pollUntil(async () => undefined, {clock, deadline: end, delayMs: () => 20})).toBeUndefined()
    expect(clock.now()).toBe(end)
  })

  it('end at once on a real failure', async () => {
    const clock = fakeClock()
    await expect(
      pollUntil(async () => Promise.reject(new TargonError('API_ERROR', 'went to state error')), {
        clock,
        deadline: clock.now() + 5000,
        delayMs: () => 10,
      }),
    ).rejects.toMatchObject({code: 'API_ERROR'})
  })
})

describe('the lock, when its holder crashed or its directory is not private', () => {
  it('takes over a lock file left empty by a crash, but not one being written right now', async () => {
    const path = join(tempDir(), 'z.lock')
    writeFileSync(path, '')
    await expect(withFileLock(path, async () => 1, {clock: fakeClock(), timeoutMs: 200})).rejects.toMatchObject({code: 'TIMEOUT'})
    const old = new Date(Date.now() - 60_000)
    utimesSync(path, old, old)
    expect(await withFileLock(path, async () => 2, {timeoutMs: 1000})).toBe(2)
  })

  it('keeps its locks under the home directory it is given, and refuses a lock directory others can write to', () => {
    const home = tempDir()
    const config = tempDir()
    const expected = join(home, '.local', 'state', 'targon-fleet', 'locks', 'delete', 'acme', 'wrk-1.lock')
    expect(deleteLockPath('acme', 'wrk-1', config, home)).toBe(expected)
    chmodSync(join(home, '.local', 'state', 'targon-fleet', 'locks'), 0o777)
    expect(() => deleteLockPath('acme', 'wrk-1', config, home)).toThrow(/writable by other users/)
    chmodSync(join(home, '.local', 'state', 'targon-fleet', 'locks'), 0o700)
    expect(deleteLockPath('acme', 'wrk-1', config, home)).toBe(expected)
  })

  it('locks in the config directory when the home directory cannot be used (no passwd entry, or unwritable)', () => {
    const config = tempDir()
    const expected = join(config, 'locks', 'delete', 'acme', 'wrk-1.lock')
    expect(deleteLockPath('acme', 'wrk-1', config, null)).toBe(expected)
    expect(deleteLockPath('acme', 'wrk-1', config, '/proc/version/nohome')).toBe(expected)
  })

  it('takes its home directory from the password database, whatever HOME, TMPDIR and XDG_RUNTIME_DIR say', () => {
    // Any account: with a usable home of its own the lock is there, without one (no home directory, or no entry in
    // the password database) in the config directory; either way never where the environment points.
    const config = tempDir()
    const chosen = deleteLockPath('acme', 'wrk-1', config)
    const names = ['HOME', 'TMPDIR', 'XDG_RUNTIME_DIR'] as const
    const saved = names.map((name) => process.env[name])
    const pointed = [tempDir(), tempDir(), tempDir()]
    try {
      Object.assign(process.env, {HOME: pointed[0], TMPDIR: pointed[1], XDG_RUNTIME_DIR: pointed[2]})
      const again = deleteLockPath('acme', 'wrk-1', config)
      expect(again).toBe(chosen)
      for (const dir of pointed) expect(again.startsWith(`${dir}/`)).toBe(false)
    } finally {
      // In place: a new object would leave process.env unlinked from the real environment for the files after this.
      for (const [index, name] of names.entries()) {
        const value = saved[index]
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }

    expect([
      join(config, 'locks', 'delete', 'acme', 'wrk-1.lock'),
      join(passwdHome() ?? '/', '.local', 'state', 'targon-fleet', 'locks', 'delete', 'acme', 'wrk-1.lock'),
    ]).toContain(chosen)
  })
})

/** This account's home in the password database; null without an entry there. */
function passwdHome(): string | null {
  try {
    return userInfo().homedir
  } catch {
    return null
  }
}

describe('the status set', () => {
  it('counts halted and transitional statuses as billing, and wakes a halted VM before deleting it', () => {
    for (const status of [...HALTED, ...TRANSITIONAL, 'some-new-status'])
      expect(judge(status, undefined), status).toEqual({billing: true, gone: false})
    for (const status of HALTED) expect(needsWake(status), status).toBe(true)
    for (const status of [...TRANSITIONAL, 'running', 'registered']) expect(needsWake(status), status).toBe(false)
  })
})

describe('meantByName', () => {
  it('prefers a deployed VM over a registered leftover, and either over a tombstone', () => {
    const vm = (uid: string, status: string, gone = false) => ({gone, status, uid})
    const pick = (...vms: ReturnType<typeof vm>[]) =>
      meantByName(
        vms,
        (each) => each.status,
        (each) => each.gone,
      ).map((each) => each.uid)
    expect(pick(vm('a', 'registered'), vm('b', 'running'))).toEqual(['b'])
    expect(pick(vm('a', 'registered'), vm('b', 'deleted', true))).toEqual(['a'])
    expect(pick(vm('a', 'running'), vm('b', 'provisioning'))).toEqual(['a', 'b'])
    expect(pick()).toEqual([])
  })
})

describe('the deletion state machine, against the simulator', () => {
  const simulated = useSimulatorClient()

  /**
   * Deletes the workloads `seed` adds, with what each deletion announced. The deletions, their client and the
   * simulator share one fake clock (`clock`, else a new one): the watches, back-offs and teardown take no real time.
   */
  async function deleteSeeded(
    seed: (sim: TargonSimulator) => void,
    {clock = fakeClock(Date.now()), ...options}: Partial<DeleteOptions> & {clock?: ReturnType<typeof fakeClock>} = {},
    simulator: SimulatorOptions = {},
  ) {
    const {client, sim} = await simulated.start({clock, ...simulator})
    seed(sim)
    const events: DeletionEvent[] = []
    const targets = [...sim.workloads.values()].map((workload) => ({name: workload.name, uid: workload.uid}))
    const results = await deleteWorkloads(client, 'acme', new LocalState(tempDir('targon-unit-del-')), targets, {
      clock,
      onEvent: (event) => events.push(event),
      reconcileMs: 600,
      ...options,
    })
    return {events, results, sim}
  }

  const running = (sim: TargonSimulator, name = 'w-run') => sim.addWorkload({deployedAt: Date.now(), name, status: 'running'})

  it('deletes a running VM with one DELETE and follows it until it is gone, announcing start and end', async () => {
    const {events, results, sim} = await deleteSeeded((sim) => running(sim))
    expect(results).toMatchObject([{action: 'deleted', billing: false}])
    expect(sim.requests('DELETE', '/workloads')).toHaveLength(1)
    expect(sim.billing()).toEqual([])
    expect(events.map((event) => event.status)).toEqual(['started', 'done'])
  })

  it('wakes a suspended VM to delete it, as Targon deletes only a running one', async () => {
    const {events, results, sim} = await deleteSeeded((sim) =>
      sim.addWorkload({deployedAt: Date.now(), name: 'w-sus', status: 'suspended'}),
    )
    expect(results).toMatchObject([{action: 'woken-and-deleted', billing: false}])
    expect(sim.requests('POST', '/deploy').length).toBeGreaterThanOrEqual(1)
    expect(sim.billing()).toEqual([])
    expect(events.some((event) => event.status === 'progress' && event.detail.includes('deploying it to delete it'))).toBe(true)
  })

  it('leaves a never-deployed workload (Targon refuses its DELETE) unless asked to wake it', async () => {
    const left = await deleteSeeded((sim) => sim.addWorkload({name: 'w-reg'}))
    expect(left.results).toMatchObject([{action: 'left-registered', billing: false}])
    expect(left.sim.live()).toHaveLength(1)
    const woken = await deleteSeeded((sim) => sim.addWorkload({name: 'w-reg'}), {wakeRegistered: true})
    expect(woken.results).toMatchObject([{action: 'woken-and-deleted', billing: false}])
    expect(woken.sim.live()).toEqual([])
  })

  it('watches a registered workload whose deploy was never answered a third of the reconcile window, then leaves it', async () => {
    const clock = fakeClock(Date.now())
    const {client, sim} = await simulated.start({clock})
    const uid = sim.addWorkload({name: 'w-reg'}).uid
    const events: DeletionEvent[] = []
    const startedAt = clock.now()
    const results = await deleteWorkloads(
      client,
      'acme',
      new LocalState(tempDir('targon-unit-del-')),
      [{deployUnsettled: true, name: 'w-reg', status: 'registered', uid}],
      {clock, onEvent: (event) => events.push(event), reconcileMs: 8000},
    )
    expect(results).toMatchObject([{action: 'left-registered', billing: false}])
    expect(clock.now() - startedAt).toBeGreaterThanOrEqual(8000 / 3)
    expect(events.some((event) => event.detail.includes('its deploy was never answered'))).toBe(true)
  })

  it('a DELETE whose answer is lost is settled by watching the state, never by a second DELETE in flight', async () => {
    const {results, sim} = await deleteSeeded((sim) => {
      running(sim)
      sim.inject({dropAfterCommit: true, method: 'DELETE', path: '/workloads/', times: 1})
    })
    expect(results).toMatchObject([{action: 'deleted', billing: false}])
    expect(sim.doubleDeletes.size).toBe(0)
    expect(sim.billing()).toEqual([])
  })

  it('a 500 after the teardown, whose tombstone shows before the state is read, is settled by a second DELETE, never by a wake', async () => {
    const {results, sim} = await deleteSeeded(
      (sim) => {
        running(sim)
        sim.inject({method: 'DELETE', path: '/workloads/', statusAfterCommit: 500, times: 1})
      },
      {},
      // The record flips to its `error` tombstone at once, before the state after the 500 is read.
      {tombstoneBounceMs: 0},
    )
    expect(results).toMatchObject([{action: 'deleted', billing: false}])
    // The second DELETE met the tombstone (204, a no-op), which tells it from a crash (500): nothing is deployed.
    expect(sim.requests('DELETE', '/workloads').map((request) => request.status)).toEqual([500, 204])
    expect(sim.requests('POST', '/deploy')).toEqual([])
    expect(sim.billing()).toEqual([])
  })

  it('a DELETE that never takes effect is sent at most four times, then reported as still billing', async () => {
    const clock = fakeClock(Date.now())
    const {results, sim} = await deleteSeeded(
      (sim) => {
        running(sim)
        sim.inject({method: 'DELETE', path: '/workloads/', reset: true})
      },
      {clock},
    )
    expect(results).toMatchObject([{action: 'still-present', billing: true}])
    // Each reset was watched a third of the reconcile window (600 ms) before the next DELETE.
    expect(clock.sleeps.reduce((sum, ms) => sum + ms, 0)).toBeGreaterThanOrEqual(4 * 200)
    expect(sim.requests('DELETE', '/workloads')).toHaveLength(4)
    expect(sim.billing()).toHaveLength(1)
  })

  it('once stopped, no deletion starts: what was not attempted is reported as billing', async () => {
    const stop = new AbortController()
    stop.abort()
    const {events, results, sim} = await deleteSeeded((sim) => running(sim), {stop: stop.signal})
    expect(results).toMatchObject([{action: 'not-attempted', billing: true}])
    expect(sim.requests('DELETE', '/workloads')).toEqual([])
    expect(events).toEqual([])
  })
})
