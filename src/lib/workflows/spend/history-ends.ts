/**
 * Ends from the server's history, for the VMs a cost report counts that ended out of this directory's sight (a
 * `last-seen` end, `bounded`): the `deleted` event of each one's history bounds its end (intervals.ts historyStop), so
 * that every directory that reads the history ends the VM where the server does, however seldom it looked.
 *
 * The histories are read by the tombstone check's reader (deletion/history.ts classifyByHistory), on the run's budget
 * of reads and time. Each is read at most once per run, and then kept: an end found is written to the ledger as a
 * `history` stop (recordHistoryStops), which closes the interval for every later report, so that it is never asked
 * about again; an answer without an end (no delete in it, no history, a failed read) is kept as the history verdict
 * (local-state.ts), asked again at most once an hour (HISTORY_LIMITS.reaskMs). A VM still listed is the listing's to
 * end: the fleet read has asked about its record already.
 */
import type {Clock} from '../../core/clock.js'
import {type HistoryBudget, classifyByHistory} from '../../domain/deletion/history.js'
import {type Interval, historyStop} from '../../domain/ledger/intervals.js'
import type {LedgerLine} from '../../domain/ledger/lines.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'

export async function endsFromHistory(
  client: TargonClient,
  state: LocalState,
  org: string,
  intervals: readonly Interval[],
  listed: ReadonlySet<string>,
  options: {budget: HistoryBudget; clock: Pick<Clock, 'now'>},
): Promise<LedgerLine[]> {
  const unseenEnds = intervals.filter((interval) => interval.endSource === 'last-seen' && !listed.has(interval.uid))
  if (unseenEnds.length === 0) return []
  const answers = await classifyByHistory(
    client,
    state,
    org,
    unseenEnds.map((interval) => interval.uid),
    options,
  )
  const now = options.clock.now()
  return unseenEnds.flatMap((interval) => {
    const answer = answers.get(interval.uid)
    const stop = answer?.kind === 'deleted' ? historyStop(interval, answer.at, now) : undefined
    return stop ? [stop] : []
  })
}
