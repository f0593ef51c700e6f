/**
 * The job store's bounds, its pruning, and its record of failing fetches. Under <config dir>/jobs/ each job whose
 * outputs down --jobs-done or a sweep fetched before deleting its VM has a directory: out/ (the outputs) and job.json
 * (written last: only a whole fetch has it). While the fetch fails, failing.json beside them counts the failures in a
 * row, since when, and whether they were notified; a whole fetch removes it.
 *
 * Beside them, record.json: the job's record as `targon run` started it from here (its --out paths, its directory, --down),
 * which jobs fetch and jobs wait go by rather than by what the VM says of the job.
 *
 * Bounds: every fetch of a job's outputs (into the store, or into ./targon-out by `targon run`, `jobs fetch` and `jobs wait`)
 * writes at most the job-store-limit setting in bytes (default 10G) and STORE_FILES files per job, and leaves room on
 * the local disk (copy/budget.ts); the file that would pass them is not written, and the fetch fails (from the store's
 * fetch, the VM is kept). An entry is pruned STORE_DAYS days after it was last written, whether or not jobs fetch
 * copied it (a copy in ./targon-out can be lost).
 */
import {lstat, mkdir, open, readdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import * as z from 'zod'

import type {CopyLimit} from '../copy/budget.js'
import {type JobRecord, JobRecordSchema, isJobId} from './job.js'

/** Files a fetch may write per job: the listing of a tree is held in memory before the copy. */
export const STORE_FILES = 100_000
/** An entry of the store is pruned this many days after it was last written. */
export const STORE_DAYS = 30
/**
 * A VM under no limit (no TTL, budget or idle limit) whose fetch keeps failing is deleted without its outputs once it
 * has failed GIVE_UP_FAILURES times in a row over at least GIVE_UP_MS: nothing else would ever end its billing.
 */
export const GIVE_UP_FAILURES = 3
export const GIVE_UP_MS = 24 * 3_600_000

/** The bound of every fetch of a job's outputs: `bytes` from the job-store-limit setting, and STORE_FILES. */
export function storeLimit(bytes: number): CopyLimit {
  return {bytes, files: STORE_FILES}
}

/** Where the outputs of a job whose VM a sweep deleted are kept (the job id is checked before it gets here). */
export function jobStoreDir(configDir: string, id: string): string {
  return join(configDir, 'jobs', id)
}

const FAILING = 'failing.json'
const LOCAL_RECORD = 'record.json'
/** What of a failure's reason is kept. */
const REASON_CHARS = 500

const FailingSchema = z.object({
  failures: z.number().int().min(1),
  first_failed_at: z.string().max(64),
  last_reason: z.string().max(REASON_CHARS),
  notified_at: z.string().max(64).nullable(),
})
export type FailingFetch = z.infer<typeof FailingSchema>

/** The most a file of the store's own (job.json, failing.json) may hold: a job's record, its command included, is far less. */
const STORE_FILE_MAX_BYTES = 1024 * 1024

/**
 * A JSON file of the store checked by `schema`; undefined when it is missing, unreadable, past STORE_FILE_MAX_BYTES
 * (read no further) or not what the schema says: a corrupt entry is no entry.
 */
export async function readStoreFile<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
  try {
    const handle = await open(path, 'r')
    try {
      const buffer = Buffer.alloc(STORE_FILE_MAX_BYTES + 1)
      const {bytesRead} = await handle.read(buffer, 0, buffer.length, 0)
      if (bytesRead > STORE_FILE_MAX_BYTES) return undefined
      const parsed = schema.safeParse(JSON.parse(buffer.toString('utf8', 0, bytesRead)))
      return parsed.success ? parsed.data : undefined
    } finally {
      await handle.close()
    }
  } catch {
    return undefined
  }
}

/** Keeps the record of a job started from here, before it starts: what jobs fetch and jobs wait fetch. */
export async function saveJobRecord(configDir: string, record: JobRecord): Promise<void> {
  const dir = jobStoreDir(configDir, record.id)
  await mkdir(dir, {mode: 0o700, recursive: true})
  await writeFile(join(dir, LOCAL_RECORD), `${JSON.stringify(record)}\n`, {mode: 0o600})
}

/** Removes the record of a job that surely did not start (its entry holds nothing else yet). */
export async function forgetJobRecord(configDir: string, id: string): Promise<void> {
  await rm(jobStoreDir(configDir, id), {force: true, recursive: true})
}

/** The record of job `id` as `targon run` started it from here; undefined for a job started elsewhere (or a corrupt record). */
export async function localJobRecord(configDir: string, id: string): Promise<JobRecord | undefined> {
  const record = await readStoreFile(join(jobStoreDir(configDir, id), LOCAL_RECORD), JobRecordSchema)
  return record?.id === id ? record : undefined
}

async function readFailing(configDir: string, id: string): Promise<FailingFetch | undefined> {
  return readStoreFile(join(jobStoreDir(configDir, id), FAILING), FailingSchema)
}

async function writeFailing(configDir: string, id: string, failing: FailingFetch): Promise<void> {
  const dir = jobStoreDir(configDir, id)
  await mkdir(dir, {mode: 0o700, recursive: true})
  await writeFile(join(dir, FAILING), `${JSON.stringify(failing)}\n`, {mode: 0o600})
}

/** Counts one more failed fetch of the job, in a row: the record as it now is. */
export async function recordFetchFailure(configDir: string, id: string, reason: string, now: number): Promise<FailingFetch> {
  const before = await readFailing(configDir, id)
  const failing: FailingFetch = {
    failures: (before?.failures ?? 0) + 1,
    first_failed_at: before?.first_failed_at ?? new Date(now).toISOString(),
    last_reason: reason.slice(0, REASON_CHARS),
    notified_at: before?.notified_at ?? null,
  }
  await writeFailing(configDir, id, failing)
  return failing
}

/** Marks the job's failing fetch as notified: it is not notified again. */
export async function markFetchFailureNotified(configDir: string, id: string, failing: FailingFetch, now: number): Promise<void> {
  await writeFailing(configDir, id, {...failing, notified_at: new Date(now).toISOString()})
}

/** After a whole fetch: the failures in a row are over. */
export async function clearFetchFailures(configDir: string, id: string): Promise<void> {
  await rm(join(jobStoreDir(configDir, id), FAILING), {force: true})
}

/** Whether a VM under no limit has failed long enough that it is deleted without its outputs (see GIVE_UP_MS). */
export function givesUp(failing: FailingFetch, now: number): boolean {
  return failing.failures >= GIVE_UP_FAILURES && now - Date.parse(failing.first_failed_at) >= GIVE_UP_MS
}

/**
 * Removes the entries of the store last written more than `days` days before `now` (by the newest of the entry's
 * directory, job.json and failing.json). Only directories named as job ids are looked at, never through a link.
 */
export async function pruneStore(configDir: string, now: number, days = STORE_DAYS): Promise<string[]> {
  const root = join(configDir, 'jobs')
  const names = await readdir(root).catch(() => [] as string[])
  const pruned: string[] = []
  for (const name of names.filter(isJobId)) {
    const dir = join(root, name)
    const stats = await lstat(dir).catch(() => undefined)
    if (!stats?.isDirectory()) continue
    const times = await Promise.all(
      ['job.json', FAILING].map((file) =>
        lstat(join(dir, file)).then(
          (each) => each.mtimeMs,
          () => 0,
        ),
      ),
    )
    if (now - Math.max(stats.mtimeMs, ...times) <= days * 86_400_000) continue
    await rm(dir, {force: true, recursive: true})
    pruned.push(name)
  }

  return pruned
}
