/**
 * `targon down`: select from the API's listing (local state only adds), delete with bounded
 * concurrency, verify against a fresh listing, and tidy local state for what is gone.
 */
import * as z from 'zod'

import type {TargonClient} from './api/client.js'
import {TargonError} from './errors.js'
import {type KnownVm, findVm, snapshot} from './inventory.js'
import {removePin} from './ssh/pins.js'
import type {LocalState, VmRecord} from './state.js'
import {type DeleteResult, DeleteResultSchema, deleteWorkloads} from './teardown.js'

const STALE_INTENT_MS = 60 * 60_000

export const DownResultSchema = z.object({
  org: z.string(),
  dry_run: z.boolean(),
  selection: z.object({
    targets: z.array(z.string()),
    all: z.boolean(),
    fleet: z.string().nullable(),
    older_than_seconds: z.number().nullable(),
    expired: z.boolean(),
    any_origin: z.boolean(),
  }),
  results: z.array(DeleteResultSchema),
  survivors: z.array(z.string()).describe('uids still present after deletion'),
})
export type DownResult = z.infer<typeof DownResultSchema>
export type DownSelection = DownResult['selection']

export interface DownOptions {
  selection: DownSelection
  dryRun: boolean
  ignoreMissing: boolean
  /** Deletions in flight at once (at most 8). */
  parallel: number
  /** Asked before a bulk deletion on a terminal; false aborts. */
  confirm: (vms: KnownVm[]) => Promise<boolean>
  warn: (message: string) => void
  onResult?: (result: DeleteResult) => void
}

/** Picks the VMs a selection names. Explicit targets are always allowed; bulk selectors only take this tool's VMs. */
export function select(vms: KnownVm[], selection: DownSelection, ignoreMissing: boolean, now = Date.now()): {chosen: KnownVm[]; unknownUids: string[]} {
  const chosen = new Map<string, KnownVm>()
  const unknownUids: string[] = []
  for (const target of selection.targets) {
    const found = findVm(vms, target)
    if (found.length > 1 && found.some((vm) => vm.uid !== target)) {
      throw new TargonError('NAME_CONFLICT', `${found.length} VMs are named ${target}: ${found.map((vm) => vm.uid).join(', ')}`, {hint: 'name them by uid'})
    }

    if (found.length === 0) {
      // A uid the listing does not show may still exist (or be gone already): DELETE settles it.
      if (/^wrk[-_]/.test(target)) unknownUids.push(target)
      else if (!ignoreMissing) throw new TargonError('NOT_FOUND', `no VM named ${target}`, {hint: 'run targon status --all-fleets, or pass --ignore-missing'})
    }

    for (const vm of found) chosen.set(vm.uid, vm)
  }

  const bulk = selection.all || selection.fleet !== null || selection.expired || selection.older_than_seconds !== null
  if (bulk) {
    for (const vm of vms) {
      if (!selection.any_origin && !vm.owned) continue
      if (selection.fleet !== null && vm.fleet !== selection.fleet) continue
      if (selection.older_than_seconds !== null && !olderThan(vm, selection.older_than_seconds, now)) continue
      if (selection.expired && !expired(vm, now)) continue
      chosen.set(vm.uid, vm)
    }
  }

  return {chosen: [...chosen.values()], unknownUids}
}

function olderThan(vm: KnownVm, seconds: number, now: number): boolean {
  const created = Date.parse(vm.workload.created_at ?? vm.record?.created_at ?? '')
  return !Number.isNaN(created) && now - created >= seconds * 1000
}

function expired(vm: KnownVm, now: number): boolean {
  const expires = Date.parse(vm.record?.ttl_expires_at ?? '')
  return !Number.isNaN(expires) && expires <= now
}

export async function runDown(client: TargonClient, org: string, state: LocalState, options: DownOptions): Promise<DownResult> {
  const view = await snapshot(client, org, state)
  for (const problem of view.problems) options.warn(problem)
  const {chosen, unknownUids} = select(view.vms, options.selection, options.ignoreMissing)
  const targets = [...chosen.map((vm) => ({name: vm.name, uid: vm.uid})), ...unknownUids.map((uid) => ({name: null, uid}))]
  const base = {dry_run: options.dryRun, org, selection: options.selection}

  if (options.dryRun) {
    return {...base, results: targets.map((target) => ({...target, action: 'would-delete' as const})), survivors: []}
  }

  if (chosen.length > 0 && !(await options.confirm(chosen))) {
    throw new TargonError('USAGE', 'deletion not confirmed; nothing was deleted', {hint: 'answer y, or pass --yes'})
  }

  const results = await deleteWorkloads(client, org, targets, {concurrency: options.parallel, onResult: options.onResult})
  // Verify against a fresh listing: only what the API no longer shows counts as gone.
  const after = new Set((await snapshot(client, org, state)).vms.map((vm) => vm.uid))
  const verified = results.map((result): DeleteResult => (after.has(result.uid) && result.action !== 'failed' ? {...result, action: 'still-present'} : result))
  const gone = verified.filter((result) => result.action === 'deleted' || result.action === 'already-gone')
  tidyLocalState(state, org, gone, view.localOnly, options.selection)

  const survivors = verified.filter((result) => result.action === 'failed' || result.action === 'still-present').map((result) => result.uid)
  const result: DownResult = {...base, results: verified, survivors}
  if (survivors.length > 0) {
    throw new TargonError('PARTIAL_FAILURE', `${survivors.length} of ${verified.length} VMs could not be deleted: ${survivors.join(', ')}`, {
      data: result,
      hint: `run targon down ${survivors.join(' ')} again; if it persists, contact Targon support`,
    })
  }

  return result
}

/** Removes the records (with their host-key pins) of deleted VMs, and stale records of the selected fleet. */
function tidyLocalState(state: LocalState, org: string, gone: DeleteResult[], localOnly: VmRecord[], selection: DownSelection): void {
  const goneUids = new Set(gone.map((result) => result.uid))
  for (const uid of goneUids) removePin(state.dir, uid)
  for (const record of state.listVms(org).records) {
    if (record.uid && goneUids.has(record.uid)) state.removeVm(org, record.name)
  }

  if (selection.all || selection.fleet !== null) {
    for (const record of localOnly) {
      // A record without a uid may belong to an `up` that is creating its VM right now.
      const settled = record.uid !== null || Date.now() - Date.parse(record.created_at) > STALE_INTENT_MS
      if (settled && (selection.fleet === null || record.fleet === selection.fleet)) state.removeVm(org, record.name)
    }
  }
}
