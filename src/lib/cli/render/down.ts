/**
 * What targon down prints of its result, and the texts of its notifications: VMs a scheduled selector deleted, a
 * deletion dstack was not told of, and VMs left billing (in the shared wording of still-billing.ts).
 */
import {priceAndOwners} from '../../adapters/notify/notify.js'
import type {NotifyEvent} from '../../adapters/notify/notify.js'
import {countOf} from '../../core/output.js'
import type {DeleteTarget} from '../../domain/deletion/delete-workloads.js'
import {NOT_RUNNING} from '../../domain/idle/idle.js'
import {hooksInWords} from '../../domain/hooks/hook.js'
import type {DownOutcome, StillBilling} from '../../workflows/down-request/request.js'
import {toTargonError} from '../base-command.js'
import {deletionResultLines, dstackOutOfSyncLines, endedJobsLines} from '../deletion-display.js'
import type {NotifyFacts} from '../reporter.js'
import {stillBillingText} from './still-billing.js'

/** A line of the human result: the result on stdout, what only informs on stderr. */
export interface Printed {
  to: 'stdout' | 'stderr'
  text: string
}

/**
 * The result, or the per-VM results of a failed run (none without). --idle: what was kept, and why, comes first (busy
 * or unreadable VMs are part of the result). VMs not running are summed up in one line, and deleted VMs still listed
 * too, unless --show-deleted (`full`); then the per-VM table.
 */
export function downLines(outcome: DownOutcome, full: boolean): Printed[] {
  const result = outcome.ok ? outcome.result : outcome.partial
  const lines: Printed[] = []
  if (!result) return lines
  const out = (text: string) => lines.push({text, to: 'stdout'})
  const info = (text: string) => lines.push({text, to: 'stderr'})
  for (const kept of result.kept)
    if (full || !kept.reason.startsWith(NOT_RUNNING)) out(`kept ${kept.name ?? kept.uid} (${kept.state}): ${kept.reason}`)
  const deleted = result.deleted_listed
  if (full) for (const vm of deleted) out(`deleted, still listed: ${vm.name ?? vm.uid} (${vm.uid})`)
  else if (deleted.length > 0)
    info(`${countOf(deleted.length, 'deleted VM')} still listed by Targon, not billing, left alone: --show-deleted lists them`)
  if (result.results.length === 0) info('Nothing to delete.')
  else for (const line of deletionResultLines(result.results)) out(line)
  return lines
}

export interface Notice {
  event: NotifyEvent
  text: string
  facts: NotifyFacts
}

/**
 * The notification of a down (none or one): on success, what --expired, --over-cost, --idle or --jobs-done deleted (else a
 * deletion dstack was not told of); on failure, what is left billing. `selected`: the VMs selected, with their facts.
 */
export function downNotices(outcome: DownOutcome, selected: DeleteTarget[]): Notice[] {
  const {stillBilling} = outcome
  if (!outcome.ok) {
    const partial = outcome.partial
    if (!partial || partial.survivors.length === 0) return []
    const failure = toTargonError(outcome.error)
    const interrupted = failure.code === 'INTERRUPTED'
    const facts = factsOf(
      selected,
      partial.survivors.map((uid) => ({uid})),
    )
    return [
      {
        event: interrupted ? 'interrupted-billing' : 'down-still-billing',
        facts: {
          exitCode: failure.exitCode,
          owner: partial.selection.owner,
          stillBilling: [...new Set([...partial.survivors, ...(stillBilling?.uids ?? [])])],
          vms: partial.results.map((each) => ({name: each.name, uid: each.uid})),
        },
        text: `targon down${interrupted ? ' was interrupted' : ''}: ${stillBillingText({facts, org: partial.org, uids: partial.survivors})}`,
      },
    ]
  }

  const {dry_run: dryRun, org, results, selection} = outcome.result
  const scheduled = [
    selection.expired && '--expired',
    selection.over_cost_usd !== null && `--over-cost ${selection.over_cost_usd}`,
    selection.idle && '--idle',
    selection.jobs_done && '--jobs-done',
  ].filter(Boolean)
  const deleted = results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted')
  const vms = deleted.map((each) => ({name: each.name, uid: each.uid}))
  const untold = dstackOutOfSyncLines(deleted)
  if (scheduled.length > 0 && !dryRun && deleted.length > 0) {
    const lines = [...hooksInWords(deleted), ...endedJobsLines(deleted), ...untold].map((line) => `\n${line}`).join('')
    return [
      {
        event: 'down-deleted',
        facts: {exitCode: 0, owner: selection.owner, stillBilling: stillBilling?.uids ?? [], vms},
        text: `targon down ${scheduled.join(' ')} deleted ${countOf(deleted.length, 'VM')} in ${org}: ${deleted.map((each) => each.name ?? each.uid).join(', ')} (${priceAndOwners(factsOf(selected, deleted))} no longer billing)${stillBillingNote(stillBilling)}${lines}`,
      },
    ]
  }

  // A deletion dstack was not told of, without a scheduled deletion's notification to carry it.
  if (untold.length === 0) return []
  return [
    {event: 'dstack-out-of-sync', facts: {exitCode: 0, owner: selection.owner, vms}, text: `targon down in ${org}: ${untold.join('')}`},
  ]
}

/** The price and owner of each of these VMs, as the listing gave them when they were selected (unknown without). */
function factsOf(selected: DeleteTarget[], vms: {uid: string}[]): {price_per_hour: number | null; owner: string | null}[] {
  return vms.map((vm) => {
    const facts = selected.find((target) => target.uid === vm.uid)?.facts
    return {owner: facts?.owner ?? null, price_per_hour: facts?.price_per_hour ?? null}
  })
}

/** What a notification's text says of the VMs still billing after a down, and where that knowledge comes from. */
function stillBillingNote(still: StillBilling | undefined): string {
  if (!still || still.uids.length === 0) return ''
  const source = still.fromListing ? '' : ' (as before the deletion: the final listing failed)'
  return `; still billing in the fleet: ${still.uids.join(', ')}${source}`
}
