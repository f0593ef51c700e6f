/**
 * What targon sweep shows and sends: the lines of its result, the notification of what it deleted or left billing,
 * the one of a short runway, and the warning of a limit about to fire.
 */
import type {SweepResult} from '../../workflows/sweep/schema.js'
import type {Warning} from '../../workflows/sweep/warnings.js'
import type {NotifyEvent} from '../../adapters/notify/notify.js'
import {hooksInWords} from '../../domain/hooks/hook.js'
import {formatDuration} from '../../core/input.js'
import {countOf, dash, printable, usd} from '../../core/output.js'
import {deletionResultLines, dstackOutOfSyncLines, endedJobsLines} from '../deletion-display.js'
import type {NotifyFacts} from '../reporter.js'
import {stillBillingText} from './still-billing.js'

/** The warning of a ping URL given on the command line. */
export const HEARTBEAT_FLAG_WARNING =
  '--heartbeat-url puts the ping URL where ps and crontabs show it: prefer TARGON_HEARTBEAT_URL or targon config set heartbeat-url'

/** A line of the human result: on stdout, or, where it only says that nothing happened, on stderr. */
export type SweepLine = {out: string} | {info: string}

/** One notification: its event, its text and its facts. */
export interface Notice {
  event: NotifyEvent
  text: string
  facts: NotifyFacts
}

export function sweepLines(result: SweepResult): SweepLine[] {
  const lines: SweepLine[] = result.kept.map((kept) => ({out: `kept ${kept.name ?? kept.uid} (${kept.state}): ${kept.reason}`}))
  if (result.results.length === 0) lines.push({info: 'Nothing past a limit.'})
  else
    for (const line of deletionResultLines(result.results, [{header: 'LIMIT', value: (row) => dash(row.reason)}])) lines.push({out: line})
  for (const vm of result.unlimited)
    lines.push({
      out: `no limit: ${vm.name ? `${vm.name} (${vm.uid})` : vm.uid}${vm.origin === 'other' ? ', not made by targon' : ''}, ${vm.price_per_hour === null ? 'price unknown' : `${usd(vm.price_per_hour)} USD/h`}`,
    })
  for (const vm of result.not_covered)
    lines.push({
      out: `not covered: ${vm.name ? `${vm.name} (${vm.uid})` : vm.uid}${vm.owner ? ` of ${vm.owner}` : ''}: limits unknown, ${printable(vm.reason)}`,
    })
  if (result.runway)
    lines.push({
      out: `Runway: ${result.runway.runway_hours === null ? 'unlimited (nothing priced bills)' : formatDuration(result.runway.runway_hours * 3_600_000)} at ${usd(result.runway.burn_usd_per_hour)} USD/h${result.runway.short ? ' (SHORT)' : ''}`,
    })
  return lines
}

/**
 * What a sweep that ended with `exitCode` sends (a dry run, nothing): one notification when it deleted something or
 * left something selected billing, and one when the runway is short.
 */
export function sweepNotices(result: SweepResult, exitCode: number, runwayShort?: {message: string; exitCode: number}): Notice[] {
  if (result.dry_run) return []
  const notices: Notice[] = []
  const deleted = result.results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted')
  if (deleted.length > 0 || result.survivors.length > 0) {
    const named = deleted.map((each) => `${each.name ?? each.uid} (${each.reason})`).join(', ')
    const billing = result.survivors.length > 0 ? `; ${stillBillingText({uids: result.survivors})}` : ''
    const details = [
      ...hooksInWords(result.results),
      ...endedJobsLines(result.results),
      // The sweep's own sync after its deletions repairs dstack's fleets; a failed one leaves that to the next.
      ...(repairedByTheSync(result.dstack_sync) ? [] : dstackOutOfSyncLines(result.results)),
    ]
    notices.push({
      event: 'sweep-deleted',
      facts: {
        exitCode,
        owner: result.selection.owner,
        stillBilling: result.survivors,
        vms: result.results.map((each) => ({name: each.name, uid: each.uid})),
      },
      text: `targon sweep deleted ${countOf(deleted.length, 'VM')} in ${result.org}${named ? `: ${named}` : ''}${billing}${details.map((line) => `\n${line}`).join('')}`,
    })
  }

  if (runwayShort)
    notices.push({
      event: 'runway-short',
      facts: {exitCode: runwayShort.exitCode, owner: result.selection.owner, vms: []},
      text: `targon sweep: ${runwayShort.message}`,
    })
  return notices
}

/** The warning of a limit about to fire: on stderr, and sent about one VM, to its owner as the text names it. */
export function warningNotice(warning: Warning): Notice {
  const what = {idle: 'its idle limit', 'max-cost': 'its budget', ttl: 'its TTL'}[warning.limit]
  const price = warning.price_per_hour === null ? 'an unknown price' : `${usd(warning.price_per_hour)} USD/h`
  return {
    event: 'sweep-warning',
    facts: {exitCode: 0, owner: warning.owner ?? null, vms: [{name: warning.name, uid: warning.uid}]},
    text: `targon sweep: ${warning.name ?? warning.uid}${warning.owner ? ` (owner ${warning.owner})` : ''} will be deleted at ${warning.fires_at.slice(0, 16)}Z by ${what}${warning.limit === 'idle' ? ' unless it gets busy' : ''}, at ${price}; to postpone it: ${warning.extend_command}`,
  }
}

/** Whether the sweep's own dstack sync ran and every fleet of it went through. */
function repairedByTheSync(sync: SweepResult['dstack_sync']): boolean {
  return sync !== null && sync.error === null && sync.fleets.every((fleet) => fleet.action !== 'failed')
}
