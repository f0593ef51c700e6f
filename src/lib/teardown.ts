/**
 * Deleting workloads so that they are really gone: one DELETE per uid (never two in
 * flight), bounded concurrency, and confirmation by polling until 404 or `deleted`.
 * Used by `down` and by every clean-up after a failed or interrupted `up`.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import * as z from 'zod'

import type {TargonClient} from './api/client.js'
import {MAX_MUTATIONS_IN_FLIGHT} from './api/http.js'
import {workloadStatus} from './api/schemas.js'
import {TargonError} from './errors.js'

export const DeleteResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  action: z.enum(['deleted', 'already-gone', 'would-delete', 'failed', 'still-present']),
  error: z.string().optional(),
})
export type DeleteResult = z.infer<typeof DeleteResultSchema>

export interface DeleteTarget {
  uid: string
  name: string | null
}

export interface DeleteOptions {
  concurrency?: number
  /** How long to wait for each deletion to be confirmed. */
  confirmTimeoutMs?: number
  /** After an unclear failure, how long to watch the state before sending the DELETE once more. */
  settleMs?: number
  onResult?: (result: DeleteResult) => void
}

export async function deleteWorkloads(client: TargonClient, org: string, targets: DeleteTarget[], options: DeleteOptions = {}): Promise<DeleteResult[]> {
  const unique = [...new Map(targets.map((target) => [target.uid, target])).values()]
  return mapBounded(unique, options.concurrency ?? MAX_MUTATIONS_IN_FLIGHT, async (target) => {
    const result = await deleteOne(client, org, target, options)
    options.onResult?.(result)
    return result
  })
}

async function deleteOne(client: TargonClient, org: string, target: DeleteTarget, options: DeleteOptions): Promise<DeleteResult> {
  const confirmMs = options.confirmTimeoutMs ?? 300_000
  const settleMs = options.settleMs ?? 30_000
  const result = (action: DeleteResult['action'], error?: string): DeleteResult => ({action, name: target.name, uid: target.uid, ...(error ? {error} : {})})

  try {
    await client.deleteWorkload(org, target.uid)
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    if (error.code === 'NOT_FOUND') return result('already-gone')
    if (error.code === 'INTERRUPTED') throw error
    if (!isUnclear(error)) return result('failed', error.message)
    // The DELETE may have been applied even though the answer says otherwise: watch before re-sending.
    if (await waitGone(client, org, target.uid, settleMs)) return result('deleted')
    try {
      await client.deleteWorkload(org, target.uid)
    } catch (retryError) {
      if (retryError instanceof TargonError && retryError.code === 'NOT_FOUND') return result('deleted')
      if (!(retryError instanceof TargonError && retryError.httpStatus === 409)) return result('failed', (retryError as Error).message)
    }
  }

  return (await waitGone(client, org, target.uid, confirmMs)) ? result('deleted') : result('still-present', `not confirmed gone within ${Math.round(confirmMs / 1000)} s`)
}

/** 5xx, 409 (a deletion already in progress), network trouble and time-outs leave the outcome open. */
function isUnclear(error: TargonError): boolean {
  return error.code === 'NETWORK_ERROR' || error.code === 'TIMEOUT' || error.code === 'BAD_RESPONSE' || (error.httpStatus !== undefined && (error.httpStatus >= 500 || error.httpStatus === 409))
}

/** Polls until the workload answers 404 or `deleted`; false when the time runs out. */
export async function waitGone(client: TargonClient, org: string, uid: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (let delay = 250; ; delay = Math.min(delay * 2, 3000)) {
    try {
      const state = await client.getWorkloadState(org, uid)
      if (workloadStatus({state}) === 'deleted') return true
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') return true
      if (error instanceof TargonError && error.code === 'INTERRUPTED') throw error
    }

    if (Date.now() + delay > deadline) return false
    await sleep(delay)
  }
}

/** Runs `work` over `items` with at most `limit` in flight, keeping the order of results. */
export async function mapBounded<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index] as T, index)
    }
  }

  await Promise.all(Array.from({length: Math.min(limit, items.length)}, () => worker()))
  return results
}
