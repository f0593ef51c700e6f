/**
 * `down --jobs-done` and the sweep: the VMs whose detached `run --down` job has ended. Each chosen VM is read over SSH
 * (its jobs, as targon jobs reads them): it is to be deleted when one of its --down jobs has ended and no job of it
 * still runs; its --out paths are fetched first into the config directory's job store (jobs/<job id>/), so that
 * `targon jobs fetch` can still copy them once the VM is gone. A VM that cannot be read, or whose outputs do not come,
 * is kept (its --ttl, --max-cost and idle limit still apply) and said in a warning.
 */
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import * as z from 'zod'

import type {DownResult} from '../down/schema.js'
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import {openVm} from '../../domain/fleet/fan-out.js'
import type {KnownVm} from '../../domain/fleet/workloads.js'
import {jobOf, readJobs} from './jobs.js'
import {type FetchResult, JobSchema} from './schema.js'
import {LocalSide} from '../copy/sides.js'
import {copyTree} from '../copy/tree.js'
import {fetchOutputs} from './fetch.js'
import type {DeletionRun} from '../run-context.js'

type Kept = DownResult['kept'][number]

export interface JobsDoneOptions {
  configDir: string
  parallel: number
  /** Without deleting (--dry-run): nothing is fetched. */
  dryRun: boolean
}

/** Where the outputs of a job whose VM a sweep deleted are kept (the job id is checked before it gets here). */
export function jobStoreDir(configDir: string, id: string): string {
  return join(configDir, 'jobs', id)
}

/** The job and its VM, beside its outputs in the store: what jobs fetch says once the VM is gone. */
const STORED_JOB = 'job.json'

const StoredJobSchema = z.object({job: JobSchema, vm: z.object({uid: z.string(), name: z.string().nullable()})})

/** A job whose outputs are in the store, with where they are; undefined when the store has none of it. */
export async function storedJob(configDir: string, id: string): Promise<(z.infer<typeof StoredJobSchema> & {dir: string}) | undefined> {
  const dir = jobStoreDir(configDir, id)
  const text = await readFile(join(dir, STORED_JOB), 'utf8').catch(() => undefined)
  const parsed = text === undefined ? undefined : StoredJobSchema.safeParse(JSON.parse(text))
  return parsed?.success ? {...parsed.data, dir: join(dir, 'out')} : undefined
}

export async function keepUnlessJobsDone(
  run: DeletionRun,
  chosen: KnownVm[],
  options: JobsDoneOptions,
): Promise<{chosen: KnownVm[]; kept: DownResult['kept']}> {
  const live = chosen.filter((vm) => !vm.gone && vm.status === 'running')
  const verdicts = await mapBounded(live, options.parallel, (vm) => verdictOf(run, vm, options))
  const kept = verdicts.filter((each): each is Kept => each !== true)
  const unreadable = kept.filter((each) => each.state === 'unreadable')
  if (unreadable.length > 0)
    run.warn(
      `kept ${countOf(unreadable.length, 'VM')} whose jobs could not be read or fetched (${unreadable.map((each) => `${each.name ?? each.uid}: ${each.reason}`).join('; ')}); their --ttl, --max-cost and idle limits still apply`,
    )
  return {chosen: live.filter((_, index) => verdicts[index] === true), kept}
}

/** true: to be deleted; else why it is kept. */
async function verdictOf(run: DeletionRun, vm: KnownVm, options: JobsDoneOptions): Promise<Kept | true> {
  const keep = (state: Kept['state'], reason: string): Kept => ({idle_seconds: null, name: vm.name, reason, state, uid: vm.uid})
  try {
    const {session} = await openVm(vm, {configDir: options.configDir, signal: run.signal})
    try {
      const {jobs} = await readJobs(session)
      const running = jobs.filter((job) => job.state === 'running')
      if (running.length > 0) return keep('busy', `busy: job ${running.map((job) => job.record.id).join(', job ')}`)
      const done = jobs.filter((job) => job.record.down)
      if (done.length === 0) return keep('idle', 'no ended run --down job')
      if (options.dryRun) return true
      for (const job of done) {
        const store = jobStoreDir(options.configDir, job.record.id)
        const fetch = await fetchOutputs(session, job.record, run.signal, join(store, 'out'))
        const failed = fetch.failed[0]
        if (failed) return keep('unreadable', `job ${job.record.id}: --out ${failed.path} was not fetched (${failed.error})`)
        await mkdir(store, {mode: 0o700, recursive: true})
        const stored = {job: jobOf(job, run.clock.now()), vm: {name: vm.name, uid: vm.uid}}
        await writeFile(join(store, STORED_JOB), `${JSON.stringify(stored)}\n`, {mode: 0o600})
      }

      return true
    } finally {
      session.close()
    }
  } catch (error) {
    return keep('unreadable', asTargonError(error).message)
  }
}

/** Copies a stored job's outputs into `root` (./targon-out/<job id>/), as a fetch from its VM would have placed them. */
export async function fetchStored(dir: string, root: string): Promise<FetchResult> {
  const local = new LocalSide()
  const fetch: FetchResult = {bytes: 0, copied: [], destination: `${root}/`, failed: [], skipped: []}
  for (const entry of await local.list(dir)) {
    if (entry.kind !== 'dir' && entry.kind !== 'file') continue
    await mkdir(root, {mode: 0o755, recursive: true})
    const outcome = await copyTree(local, local, join(dir, entry.name), entry, join(root, entry.name), entry.name, {lost: () => null})
    fetch.copied.push(...outcome.copied)
    fetch.failed.push(...outcome.failed)
    fetch.skipped.push(...outcome.skipped)
    fetch.bytes += outcome.bytes
  }

  return fetch
}
