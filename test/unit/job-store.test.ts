/** The job store: the bound of a fetch into it, its size setting, pruning, and the count of failing fetches. */
import {existsSync, mkdirSync, readdirSync, readFileSync, truncateSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {parseSize} from '../../src/lib/core/input.js'
import {CopyBudget, FREE_RESERVE, formatBytes, freeSpace} from '../../src/lib/workflows/copy/budget.js'
import {LocalSide} from '../../src/lib/workflows/copy/sides.js'
import {copyTree} from '../../src/lib/workflows/copy/tree.js'
import {
  GIVE_UP_FAILURES,
  GIVE_UP_MS,
  clearFetchFailures,
  givesUp,
  jobStoreDir,
  localJobRecord,
  markFetchFailureNotified,
  pruneStore,
  recordFetchFailure,
  saveJobRecord,
} from '../../src/lib/workflows/job/job-store.js'
import {storedJob} from '../../src/lib/workflows/job/jobs-done.js'
import {tempDir} from '../helpers/cli.js'

describe('the bound of every fetch of outputs', () => {
  const DIR = '/nowhere'
  const roomy = async () => 1024 ** 5

  it('takes files until the next one would pass the files or bytes bound, and then takes nothing more', async () => {
    const bytes = new CopyBudget({bytes: 100, files: 10}, roomy)
    expect(await bytes.take(60, DIR)).toBeNull()
    expect(await bytes.take(40, DIR)).toBeNull()
    expect(await bytes.take(1, DIR)).toBe(
      'the fetch stopped at its bound of 100B, the job-store-limit setting (100B in 2 files arrived; the next file has 1B); raise it with targon config set job-store-limit SIZE',
    )
    expect(await bytes.take(0, DIR)).toBeNull()
    const files = new CopyBudget({bytes: 1000, files: 2}, roomy)
    expect([await files.take(1, DIR), await files.take(1, DIR), await files.take(1, DIR)]).toEqual([
      null,
      null,
      'the fetch stopped at its bound of 2 files (2B in 2 files arrived)',
    ])
    expect(formatBytes(10 * 1024 ** 3)).toBe('10G')
    expect(formatBytes(1536)).toBe('1.5K')
  })

  it('counts what arrived: a file whose copy failed gives its bytes back', async () => {
    const budget = new CopyBudget({bytes: 100, files: 10}, roomy)
    expect(await budget.take(80, DIR)).toBeNull()
    budget.giveBack(80)
    expect(await budget.take(100, DIR)).toBeNull()
  })

  it('stops where the local disk would keep less than its reserve free, and says how much is free', async () => {
    const asked: string[] = []
    const free = async (dir: string) => {
      asked.push(dir)
      return FREE_RESERVE + 1000
    }
    const budget = new CopyBudget({bytes: 10 * 1024 ** 3, files: 10}, free)
    expect(await budget.take(1000, 'targon-out/j')).toBeNull()
    expect(await budget.take(1001, 'targon-out/j/sub')).toBe(
      'the fetch stopped: the local disk of targon-out/j/sub has 64M free, too little for the next file (1001B) and 64M to spare (1000B in 1 file arrived); free some space and fetch again',
    )
    expect(asked).toEqual(['targon-out/j', 'targon-out/j/sub'])
    // A disk whose free space cannot be read is not in the way: the write itself then says what is wrong.
    const unknown = new CopyBudget({bytes: 100, files: 10}, async () => {
      throw new Error('ENOSYS')
    })
    expect(await unknown.take(100, DIR)).toBeNull()
    // The real statfs reads a real directory.
    expect(await freeSpace(tempDir('targon-free-'))).toBeGreaterThan(0)
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
    expect(outcome.stopped).toMatch(
      /^the fetch stopped at its bound of 2\.4K, the job-store-limit setting \(2K in 2 files arrived; the next file has 1000B\)/,
    )
    expect(readdirSync(target).sort()).toEqual(['a', 'b'])
    expect(readFileSync(join(target, 'b'))).toEqual(Buffer.alloc(1000, 'b'))
  })

  it('counts a sparse file at its length: 2 GiB that take no disk stop at a 1 MiB bound, and nothing of them is written', async () => {
    const source = tempDir('targon-sparse-src-')
    mkdirSync(join(source, 'out'))
    writeFileSync(join(source, 'out', 'a.txt'), 'small\n')
    writeFileSync(join(source, 'out', 'big'), '')
    truncateSync(join(source, 'out', 'big'), 2 * 1024 ** 3)
    const target = join(tempDir('targon-sparse-dst-'), 'out')
    const local = new LocalSide()
    const entry = (await local.list(source)).find((each) => each.name === 'out')!
    const budget = new CopyBudget({bytes: 1024 ** 2, files: 100})
    const outcome = await copyTree(local, local, join(source, 'out'), entry, target, 'out', {budget, lost: () => null})
    expect(outcome.copied).toEqual(['out/a.txt'])
    expect(outcome.bytes).toBe(6)
    expect(outcome.stopped).toContain('the fetch stopped at its bound of 1M')
    expect(readdirSync(target)).toEqual(['a.txt'])
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

describe('the record of a job started from here', () => {
  it('is kept before the start and read back by its id; a record of another id, or a corrupt one, is none', async () => {
    const dir = tempDir('targon-store-')
    const id = 'j-20261201-030527-a1b2c3'
    const record = {
      command: 'make',
      down: true,
      id,
      out: ['results'],
      started_at: '2026-12-01T03:05:27.000Z',
      workdir: '/home/ubuntu/targon/work/w',
    }
    expect(await localJobRecord(dir, id)).toBeUndefined()
    await saveJobRecord(dir, record)
    expect(await localJobRecord(dir, id)).toEqual(record)
    // A record moved under another job's name is not that job's.
    const other = 'j-20261201-030527-ffffff'
    mkdirSync(jobStoreDir(dir, other), {recursive: true})
    writeFileSync(join(jobStoreDir(dir, other), 'record.json'), JSON.stringify(record))
    expect(await localJobRecord(dir, other)).toBeUndefined()
    writeFileSync(join(jobStoreDir(dir, id), 'record.json'), '{"id": ')
    expect(await localJobRecord(dir, id)).toBeUndefined()
  })
})
