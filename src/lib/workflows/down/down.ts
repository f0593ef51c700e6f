/**
 * `targon down`: select from the API's listing (local state only adds), delete with bounded
 * concurrency until nothing selected bills (deletion/delete-workloads.ts), verify against a fresh listing, and
 * tidy local state for what no longer bills.
 */

import type {TargonClient} from '../../adapters/targon/client.js'
import {TargonError, abortError} from '../../core/errors.js'
import {invalidWarning, readFleet} from '../../domain/fleet/fleet-read.js'
import {judge} from '../../domain/deletion/lifecycle.js'
import {countOf} from '../../core/output.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {DownResult} from './schema.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import {chooseTargets, isBulk} from './selection.js'
import {endedJobsOf} from './ended-jobs.js'
import type {DeletionRun} from '../run-context.js'
import type {DownOptions} from './options.js'
import {selectTargets} from './targets.js'
import {deleteSelected} from './deletion-pass.js'
import {settleResults} from './settle.js'

export type {DownOptions} from './options.js'

export async function runDown(
  run: DeletionRun,
  client: TargonClient,
  cleanupClient: TargonClient,
  org: string,
  state: LocalState,
  options: DownOptions,
): Promise<DownResult> {
  const {selection} = options
  const {clock} = run
  const view = await readFleet(client, org, state, {
    clock,
    historyBudget: run.historyBudget,
    readOwners: isBulk(selection) || selection.owner !== null,
  })
  recordFleetRead(state, org, view, clock)
  for (const problem of view.problems) run.warn(problem)
  const listed = new Set(view.vms.map((vm) => vm.uid))
  state.pruneDeleteNotes(org, listed, clock.now())
  state.pruneHistoryVerdicts(org, listed, clock.now())
  const {decided, targets} = await selectTargets(run, client, org, state, view, options)
  const {kept} = decided

  // A listed item that failed the API checks may bill, but nothing can tell whose it is: a bulk selector never deletes
  // it, it is reported, and it keeps the exit non-zero; naming its exact uid deletes it (a target above). A sweep
  // (narrow) reports it as down --expired does. Under --idle they are not idle VMs selected: the exit code is the idle
  // VMs' alone.
  const invalid: DeleteResult[] =
    isBulk(options.selection) && !options.selection.idle
      ? view.invalid
          .filter((item) => !targets.some((target) => target.uid === item.uid))
          .map((item) => ({action: 'invalid-answer', billing: null, error: item.problem, name: null, uid: item.uid ?? '(none)'}))
      : []
  if (invalid.length > 0) run.warn(invalidWarning(view.invalid))
  const deletedListed = isBulk(selection)
    ? chooseTargets(view.vms, {...selection, tombstones: true}, options.labelFleet, clock.now()).chosen
    : []
  const base = {
    deleted_listed: deletedListed.map((vm) => ({name: vm.name, uid: vm.uid})),
    dry_run: options.dryRun,
    kept,
    org,
    selection: options.selection,
  }
  const ended = endedJobsOf(run, targets, decided.idleUids ?? [], options)
  const pending = decided.chosen.filter((vm) => !vm.gone)
  if (options.dryRun) {
    await ended.read(pending)
    const plan = targets.map((target) => {
      const verdict = judge(target.status ?? 'unknown', state.readDeleteNote(org, target.uid))
      return ended.inResult({
        action: verdict.gone ? ('already-gone' as const) : ('would-delete' as const),
        billing: verdict.billing,
        name: target.name,
        uid: target.uid,
      })
    })
    return {...base, results: [...plan, ...invalid], survivors: []}
  }

  if (pending.length > 0 && !(await options.confirm(pending))) {
    throw new TargonError('USAGE', 'deletion not confirmed; nothing was deleted', {hint: 'answer y, or pass --yes'})
  }

  const results = await deleteSelected(run, cleanupClient, org, state, {ended, pending, targets}, options)
  const verified = await settleResults(run, cleanupClient, org, state, view, results, options)
  verified.push(...invalid)

  const survivors = verified.filter((result) => result.billing !== false).map((result) => result.uid)
  const result: DownResult = {...base, results: verified, survivors}
  if (run.signal.aborted) {
    const reason = abortError(run.signal)
    throw new TargonError(
      'INTERRUPTED',
      `${reason.message}; ${survivors.length === 0 ? 'nothing selected still bills' : `still billing: ${survivors.join(', ')}`}`,
      {
        data: result,
        hint: survivors.length === 0 ? undefined : `run targon down ${survivors.join(' ')}`,
        signal: reason instanceof TargonError ? reason.signal : undefined,
      },
    )
  }

  if (survivors.length > 0) {
    throw new TargonError(
      'PARTIAL_FAILURE',
      `${survivors.length} of ${countOf(verified.length, 'VM')} still ${survivors.length === 1 ? 'bills' : 'bill'}: ${survivors.join(', ')}`,
      {
        data: result,
        hint: `run targon down ${survivors.join(' ')} again; if it persists, contact Targon support`,
      },
    )
  }

  return result
}
