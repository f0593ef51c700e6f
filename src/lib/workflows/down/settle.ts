/**
 * What a down's deletions settled, verified against a fresh listing, and the records it then tidies: this directory
 * forgets what no longer bills, and what of this tool still bills in the fleet is said (onStillBilling).
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import type {LocalState, VmRecord} from '../../adapters/state/local-state.js'
import {forgetVm} from '../../domain/deletion/forget.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import {type FleetView, type KnownVm, billingOfTool, readFleet} from '../../domain/fleet/fleet-read.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import type {DeletionRun} from '../run-context.js'
import type {DownOptions} from './options.js'
import type {DownSelection} from './selection.js'

const STALE_INTENT_MS = 60 * 60_000

/** The results as a fresh listing leaves them, with the records tidied after them; `view` is the run's first listing. */
export async function settleResults(
  run: DeletionRun,
  cleanupClient: TargonClient,
  org: string,
  state: LocalState,
  view: FleetView,
  results: DeleteResult[],
  options: DownOptions,
): Promise<DeleteResult[]> {
  const {selection} = options
  const {clock} = run
  // Verify against a fresh listing: what still bills there is not gone, whatever the answers said. Without a listing,
  // the per-VM results (each already confirmed by its state) stand.
  const final = await readFleet(cleanupClient, org, state, {
    clock,
    historyBudget: run.historyBudget,
    readOwners: selection.owner !== null,
  }).catch((error: unknown) => {
    run.warn(`the final listing failed (${(error as Error).message}); the results are not verified against it`)
    return undefined
  })
  if (final) recordFleetRead(state, org, final, clock)
  const after = new Map((final?.vms ?? []).map((vm) => [vm.uid, vm]))
  const verified = results.map((result): DeleteResult =>
    result.billing === false && bills(after.get(result.uid)) ? {...result, action: 'still-present', billing: true} : result,
  )
  tidyLocalState(state, org, verified, options.keepUnlistedRecords ? [] : view.localOnly, options.selection, clock.now())
  const settledUids = new Set(verified.filter((each) => each.billing === false).map((each) => each.uid))
  options.onStillBilling?.(
    billingOfTool(final?.vms ?? view.vms, selection.fleet, selection.owner).filter((uid) => final !== undefined || !settledUids.has(uid)),
    final !== undefined,
  )
  return verified
}

/**
 * Whether the final listing shows a VM billing, on evidence: an `error` record of unknown billing may be the tombstone
 * of a delete made elsewhere, and cannot overrule a result.
 */
function bills(vm: KnownVm | undefined): boolean {
  return vm?.billing === true
}

/** Removes the records (with their host-key pins) of VMs that no longer bill, and stale records of the selected fleet. */
function tidyLocalState(
  state: LocalState,
  org: string,
  results: DeleteResult[],
  localOnly: VmRecord[],
  selection: DownSelection,
  now: number,
): void {
  const settled = new Set(results.filter((result) => result.billing === false).map((result) => result.uid))
  for (const uid of settled) forgetVm(state, org, uid)

  if (selection.all || selection.fleet !== null) {
    for (const record of localOnly) {
      // A record without a uid may belong to an `up` that is creating its VM right now.
      const stale = record.uid !== null || now - Date.parse(record.created_at) > STALE_INTENT_MS
      if (stale && (selection.fleet === null || record.fleet === selection.fleet)) state.removeVm(org, record.name)
    }
  }
}
