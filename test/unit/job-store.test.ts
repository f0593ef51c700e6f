/** The job store: the bound of a fetch into it, its size setting, pruning, and the count of failing fetches. */
import {existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {parseSize} from '../../src/lib/core/input.js'
import {CopyBudget, formatBytes} from '../../src/lib/workflows/copy/budget.js'
import {LocalSide} from '../../src/lib/workflows/copy/sides.js'
import {copyTree} from '../../src/lib/workflows/copy/tree.js'
import {
  GIVE_UP_FAILURES,
  GIVE_UP_MS,
  clearFetchFailures,
  givesUp,
  jobStoreDir,
  markFetchFailureNotified,
  pruneStore,
  recordFetchFailure,
} from '../../src/lib/workflows/run/job-store.js'
import {storedJob} from '../../src/lib/workflows/run/jobs-done.js'
import {tempDir} from '../helpers/cli.js'

describe('the bound of a fetch into the job store', () => {
  it('takes files until the next one would pass the files or bytes bound, and then takes nothing more', () => {
    const bytes = new CopyBudget({bytes: 100, files: 10})
    expect(bytes.take(60)).toBeNull()
    expect(bytes.take(40)).toBeNull()
    expect(bytes.take(1)).toBe('more than 100B, the bound of the job store (100B written)')
    expect(bytes.take(0)).toBeNull()
    const files = new CopyBudget({bytes: 1000, files: 2})
    expect([files.take(1), files.take(1), files.take(1)]).toEqual([null, null, 'more than 2 files, the bound of the job store'])
    expect(formatBytes(10 * 1024 ** 3)).toBe('10G')
    expect(formatBytes(1536)).toBe('1.5K')
  })

  it('stops a tree copy before the file that would pass it: what was copied is whole, nothing past the bound is written', async () => {
    const source = tempDir('targon-bound-src-')
    mkdirSync(join(source, 'tree'))
    for (const name of ['a', 'b', 'c', 'd']) writeFileSync(join(source, 'tree', name), Buffer.alloc(1000, name))
    const target = join(tempDir('targon-bound-dst-'), 'tree')
    const local = new LocalSide()
    const entry = (await local.list(source)).find((each) => each.name === 'tree')!
    const budget = new CopyBudget({bytes: 2500, files: 100})
    const outcome = await copyTree(local, local, join(source, 'tree'), entry, target, 'tree', {budget, lost: () => null})
    expect(outcome.copied).toEqual(['tree/a', 'tree/b'])
    expect(outcome.stopped).toBe('more than 2.4K, the bound of the job store (2K written)')
    expect(readdirSync(target).sort()).toEqual(['a', 'b'])
    expect(readFileSync(join(target, 'b'))).toEqual(Buffer.alloc(1000, 'b'))
  })

  it('reads the job-store-limit setting as a size with a binary unit, within 1M to 1T', () => {
    expect(parseSize('10G', 'job-store-limit', {max: 1024 ** 4, min: 1024 ** 2})).toBe(10 * 1024 ** 3)
    expect(parseSize('512MiB', 'job-store-limit', {max: 1024 ** 4, min: 1024 ** 2})).toBe(512 * 1024 ** 2)
    expect(parseSize('1.5t', 'x', {max: 2 * 1024 ** 4, min: 1})).toBe(1.5 * 1024 ** 4)
    for (const bad of ['', 'ten', '10X', '-1G', '512K', '2T'])
      expect(() => parseSize(bad, 'job-store-limit', {max: 1024 ** 4, min: 1024 ** 2})).toThrow(/job-store-limit ".*" is not a size/)
  })
})

describe('the failing fetches of a job', () => {
  const id = 'j-20261202-030527-a1b2c3'
  const now = Date.parse('2026-12-02T06:00:00Z')

  it('are counted in a row from the first, keep when they were notified, and end with a whole fetch', async () => {
    const dir = tempDir('targon-store-')
    const first = await recordFetchFailure(dir, id, 'connection lost', now)
    expect(first).toEqual({failures: 1, first_failed_at: '2026-12-02T06:00:00.000Z', last_reason: 'connection lost', notified_at: null})
    await markFetchFailureNotified(dir, id, first, now)
    const second = await recordFetchFailure(dir, id, 'x'.repeat(2000), now + 60_000)
    expect(second).toMatchObject({failures: 2, first_failed_at: first.first_failed_at, notified_at: '2026-12-02T06:00:00.000Z'})
    expect(second.last_reason).toHaveLength(500)
    await clearFetchFailures(dir, id)
    expect(await recordFetchFailure(dir, id, 'again', now + 120_000)).toMatchObject({failures: 1, notified_at: null})
  })

  it(`give a VM under no limit up after ${GIVE_UP_FAILURES} failures over at least a day, not before`, () => {
    const failing = {failures: GIVE_UP_FAILURES, first_failed_at: new Date(now).toISOString(), last_reason: '', notified_at: null}
    expect(givesUp(failing, now + GIVE_UP_MS - 1)).toBe(false)
    expect(givesUp(failing, now + GIVE_UP_MS)).toBe(true)
    expect(givesUp({...failing, failures: GIVE_UP_FAILURES - 1}, now + 10 * GIVE_UP_MS)).toBe(false)
  })
})

describe('pruning the job store', () => {
  it('removes job entries last written more than 30 days ago, and nothing else', async () => {
    const dir = tempDir('targon-store-')
    const old = 'j-20261001-030527-a1b2c3'
    const fresh = 'j-20261201-030527-a1b2c3'
    for (const id of [old, fresh]) {
      mkdirSync(join(jobStoreDir(dir, id), 'out'), {recursive: true})
      writeFileSync(join(jobStoreDir(dir, id), 'job.json'), '{}')
    }
    mkdirSync(join(dir, 'jobs', 'not-a-job'))
    const now = Date.now()
    const longAgo = (now - 31 * 86_400_000) / 1000
    utimesSync(join(jobStoreDir(dir, old), 'job.json'), longAgo, longAgo)
    utimesSync(jobStoreDir(dir, old), longAgo, longAgo)
    utimesSync(join(dir, 'jobs', 'not-a-job'), longAgo, longAgo)
    expect(await pruneStore(dir, now)).toEqual([old])
    expect(existsSync(jobStoreDir(dir, old))).toBe(false)
    expect(existsSync(jobStoreDir(dir, fresh))).toBe(true)
    expect(existsSync(join(dir, 'jobs', 'not-a-job'))).toBe(true)
    expect(await pruneStore(tempDir('targon-store-'), now)).toEqual([])
  })
})

describe('reading a job of the store', () => {
  it('reads a whole entry, and takes a corrupt, huge or missing job.json for no entry', async () => {
    const dir = tempDir('targon-store-')
    const id = 'j-20261201-030527-a1b2c3'
    const job = {
      command: 'python train.py',
      down: true,
      duration_ms: 1000,
      exit_code: 0,
      id,
      signal: null,
      started_at: '2026-12-01T03:05:27.000Z',
      state: 'succeeded',
      workdir: '/home/ubuntu/targon/work/w',
    }
    const file = join(jobStoreDir(dir, id), 'job.json')
    mkdirSync(jobStoreDir(dir, id), {recursive: true})
    writeFileSync(file, JSON.stringify({job, vm: {name: 'gpu1', uid: 'wrk-1'}}))
    expect(await storedJob(dir, id)).toEqual({dir: join(jobStoreDir(dir, id), 'out'), job, vm: {name: 'gpu1', uid: 'wrk-1'}})

    writeFileSync(file, '{"job": {"id": ')
    expect(await storedJob(dir, id)).toBeUndefined()
    writeFileSync(file, JSON.stringify({job, pad: 'x'.repeat(2 * 1024 * 1024), vm: {name: 'gpu1', uid: 'wrk-1'}}))
    expect(await storedJob(dir, id)).toBeUndefined()
    expect(await storedJob(dir, 'j-20261201-030527-ffffff')).toBeUndefined()
  })
})
