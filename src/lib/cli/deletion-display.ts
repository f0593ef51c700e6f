/**
 * What a deleting command (down, sweep) shows of its deletions as they happen: each one's events, a line per result
 * on stderr, and, for a forced exit (a second Ctrl-C), which of the selected VMs may still bill.
 */
import type {DeleteResult} from '../domain/deletion/schema.js'
import {type Column, dash, renderTable} from '../core/output.js'
import type {DeleteTarget, DeletionEvent} from '../domain/deletion/delete-workloads.js'
import type {RunEvents} from '../adapters/events/run-events.js'
import {hooksInWords} from '../domain/hooks/hook.js'
import {endedJobsInWords} from '../workflows/down/ended-jobs.js'

export function followDeletions(events: RunEvents, info: (line: string) => void) {
  const settled = new Set<string>()
  let selected: DeleteTarget[] = []
  return {
    /** The lines a forced exit prints: what may still bill, and the command that deletes it. */
    forcedExitLines: (): string[] => {
      const billing = selected.map((target) => target.uid).filter((uid) => !settled.has(uid))
      return billing.length > 0
        ? [`Exiting at once. May still bill: ${billing.join(' ')}`, `Delete with: targon down ${billing.join(' ')}`]
        : ['Exiting at once.']
    },
    onEvent: (event: DeletionEvent): void => {
      events.emit({...event, type: 'deletion'})
      if (event.status === 'progress') info(event.detail)
    },
    onResult: (deleted: DeleteResult): void => {
      if (deleted.billing === false) settled.add(deleted.uid)
      const jobs = endedJobsInWords(deleted.ended_jobs)
      info(
        `${deleted.action}: ${deleted.name ? `${deleted.name} (${deleted.uid})` : deleted.uid}${deleted.error ? `: ${deleted.error}` : ''}${jobs === '' ? '' : `; ${jobs}`}`,
      )
    },
    onTargets: (targets: DeleteTarget[]): void => {
      selected = targets
    },
    /** The VMs the run selected for deletion, with the facts the listing gave of them. */
    selected: (): DeleteTarget[] => selected,
  }
}

/**
 * The lines a deleting command prints of its results: the table (NAME, UID, the `after` columns, RESULT, BILLING),
 * then what each pre-delete hook did.
 */
export function deletionResultLines<Row extends DeleteResult>(results: Row[], after: Column<Row>[] = []): string[] {
  const table = renderTable<Row>(
    [
      {header: 'NAME', value: (row) => dash(row.name)},
      {header: 'UID', value: (row) => row.uid},
      ...after,
      {header: 'RESULT', value: (row) => row.action},
      {header: 'BILLING', value: (row) => (row.billing === null ? '?' : row.billing ? 'yes' : 'no')},
    ],
    results,
  )
  return [table, ...hooksInWords(results), ...endedJobsLines(results)]
}

/**
 * One line, for notifications, naming the deleted VMs that dstack could not be told of (it did not answer, or refused):
 * its fleet may list them as hosts until the next targon dstack sync. None when there are none.
 */
export function dstackOutOfSyncLines(results: readonly Pick<DeleteResult, 'dstack' | 'name' | 'uid'>[]): string[] {
  const untold = results.filter((row) => row.dstack === 'unreachable' || row.dstack === 'failed')
  if (untold.length === 0) return []
  const names = untold.map((row) => row.name ?? row.uid).join(', ')
  return [`dstack could not be told of the deletion of ${names}: its fleet may list them until the next targon dstack sync`]
}

/** A line for each deletion that ended jobs of targon run, for the result and notifications. */
export function endedJobsLines(results: readonly Pick<DeleteResult, 'ended_jobs' | 'name' | 'uid'>[]): string[] {
  return results.flatMap((row) => {
    const words = endedJobsInWords(row.ended_jobs)
    return words === '' ? [] : [`${row.name ?? row.uid}: ${words}`]
  })
}
