/**
 * A tombstone known from anywhere: the server's own history of a workload (GET O/workloads/{uid}/events).
 *
 * An `error` record is either the tombstone of a completed delete (it does not bill) or a crash (it bills), and a
 * directory that did not send the DELETE has no delete note to tell them apart. The history does: a workload whose
 * history has a `deleted` event, with no later event (by created_at) that moves it to a status other than `deleted`
 * or `error`, is a tombstone, and its billing ended at that event. Finding such an event decides (reading stops there)
 * when the pages go newest first, as a later page then holds only older events; pages that go oldest first are read to
 * the end. "No delete" (a crash) needs the whole history, read to at most HISTORY_LIMITS.pages pages. Anything less
 * (a 404, an empty or longer history, any event that fails the checks, a failed read) leaves the record "billing unknown",
 * never "billing" and never "deleted". Only `new_status` and `created_at` are relied on; the order of the events and how
 * long the server keeps them are known only from Targon's SDK, so neither is assumed.
 *
 * Reads are rationed: only `error` records without a delete note are asked about; a `deleted` verdict is kept (like
 * a delete note); a crashed or unknown one is asked again at most once an hour (an answer of API trouble is not kept); a run reads at most `readsPerRun`
 * histories, `inFlight` at a time, and none more once the API fails to answer one. Time is rationed too: each page has
 * a short deadline of its own (targon/client.ts HISTORY_PAGE), and a run spends at most `runMs` on history reads, so
 * that a slow or hanging endpoint never holds up a command (a `down` above all): what is not read by then stays unknown.
 */
import {type Clock, REAL_CLOCK, stopwatch} from '../../core/clock.js'
import {mapBounded} from '../../core/concurrency.js'
import {TargonError} from '../../core/errors.js'
import type {HistoryVerdict, LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {WorkloadEventSchema} from '../../adapters/targon/schemas.js'

export const HISTORY_LIMITS = {
  /** Pages of one history read at most: a longer history without a decisive event stays unknown. */
  pages: 5,
  /** Histories read per run; the rest stay unknown until a later run. */
  readsPerRun: 100,
  inFlight: 8,
  /** Time a run spends on history reads at most; reads still under way then are abandoned (unknown). */
  runMs: 20_000,
  /** A crashed or unknown verdict stands this long before the history is asked again. */
  reaskMs: 3_600_000,
  /** A kept verdict's last_listed_at is brought up to date when older than this (few writes, a day's precision). */
  listedEveryMs: 86_400_000,
}

/** What the history says of one `error` record. */
export type HistoryAnswer =
  | {kind: 'deleted'; at: number}
  | {kind: 'crashed'}
  /** `trouble`: the API itself did not answer (a timeout, the network, a 5xx after retries), not this workload's history. */
  | {kind: 'unknown'; why: string; trouble?: boolean}

/** Failures of the API rather than of one workload's history: the reads still queued in the run are not sent. */
const TROUBLE: ReadonlySet<string> = new Set(['API_ERROR', 'NETWORK_ERROR', 'TIMEOUT'])

/**
 * How many history reads, and how much time for them, are left to one run, shared by every listing the run makes.
 * Each run owns its own (RunContext.historyBudget), so that runs in one process (tests, embedding) never share one.
 * `msLeft` absent: the full HISTORY_LIMITS.runMs.
 */
export interface HistoryBudget {
  left: number
  msLeft?: number
}

/** A new run's full ration of history reads. */
export function newHistoryBudget(): HistoryBudget {
  return {left: HISTORY_LIMITS.readsPerRun, msLeft: HISTORY_LIMITS.runMs}
}

/** Statuses after a `deleted` event that leave it a tombstone: Targon's record flips to `error` after a delete. */
export const STILL_DELETED: ReadonlySet<string> = new Set(['deleted', 'error'])

interface Event {
  status: string
  at: number
}

/** Reads one workload's history, page by page, until it decides or ends; `now` bounds the end it reports. */
export async function readHistory(client: TargonClient, org: string, uid: string, now: number): Promise<HistoryAnswer> {
  const events: Event[] = []
  let unreadable = 0
  let cursor: string | undefined
  const cursors = new Set<string>()
  for (let page = 0; page < HISTORY_LIMITS.pages; page++) {
    let answer
    try {
      answer = await client.workloadEventsPage(org, uid, cursor)
    } catch (error) {
      if (!(error instanceof TargonError) || error.code === 'INTERRUPTED') throw error
      if (error.code === 'NOT_FOUND') return {kind: 'unknown', why: 'no history (404)'}
      return {kind: 'unknown', trouble: TROUBLE.has(error.code), why: `history unreadable (${error.code})`}
    }

    for (const item of answer.items) {
      const parsed = WorkloadEventSchema.safeParse(item)
      // An event that changed no status cannot undo a delete, nor be one: skipped.
      if (parsed.success && (parsed.data.new_status ?? null) === null) continue
      const at = parsed.success ? Date.parse(parsed.data.created_at) : Number.NaN
      if (parsed.success && !Number.isNaN(at)) events.push({at, status: (parsed.data.new_status as string).toLowerCase()})
      else unreadable++
    }

    // An event that failed the checks may have been the delete, or what undid it: it leaves the answer unknown.
    if (unreadable > 0) return {kind: 'unknown', why: `${unreadable} unreadable event(s)`}
    const deletedAt = tombstoneSince(events)
    // A later page can undo the delete only if the pages go oldest first: stop early only when they go newest first.
    const decided = deletedAt !== undefined && (!answer.nextCursor || newestFirst(events))
    if (decided) return {at: Math.min(deletedAt, now), kind: 'deleted'}
    if (!answer.nextCursor) return events.length === 0 ? {kind: 'unknown', why: 'empty history'} : {kind: 'crashed'}

    if (cursors.has(answer.nextCursor)) return {kind: 'unknown', why: 'the history repeated a page cursor'}
    cursors.add(answer.nextCursor)
    cursor = answer.nextCursor
  }

  return {kind: 'unknown', why: `history longer than ${HISTORY_LIMITS.pages} pages`}
}

/** Whether the events, in the order the server sent them, go from newest to oldest (two times apart at least to tell). */
function newestFirst(events: readonly Event[]): boolean {
  const [first, last] = [events[0], events.at(-1)]
  return first !== undefined && last !== undefined && last.at < first.at
}

/** When the latest `deleted` event happened, unless a later event moved the workload on (to running, say). */
export function tombstoneSince(events: readonly Event[]): number | undefined {
  let deletedAt: number | undefined
  for (const event of events) if (event.status === 'deleted' && (deletedAt === undefined || event.at > deletedAt)) deletedAt = event.at
  if (deletedAt === undefined) return undefined
  const movedOn = events.some((event) => event.at > deletedAt && !STILL_DELETED.has(event.status))
  return movedOn ? undefined : deletedAt
}

export interface ClassifyOptions {
  clock: Pick<Clock, 'now'>
  /** The run's budget, spent by this call. */
  budget: HistoryBudget
}

/**
 * The history's answer for each uid asked about (`error` records without a delete note): from the kept verdict when
 * it still stands, else from a read while the run's budget lasts, else unknown. Only the files of the uids asked about
 * are read, so a listing pays for its `error` records, not for the cache (down prunes it, with the delete notes).
 */
export async function classifyByHistory(
  client: TargonClient,
  state: LocalState,
  org: string,
  uids: readonly string[],
  options: ClassifyOptions,
): Promise<Map<string, HistoryAnswer>> {
  const {budget} = options
  const now = options.clock.now()
  const answers = new Map<string, HistoryAnswer>()
  const toRead: string[] = []
  for (const uid of uids) {
    const verdict = state.readHistoryVerdict(org, uid)
    const standing = verdict && (verdict.verdict === 'deleted' || now - Date.parse(verdict.asked_at) < HISTORY_LIMITS.reaskMs)
    if (verdict && standing) {
      answers.set(uid, answerOf(verdict))
      noteListed(state, org, verdict, now)
    } else if (budget.left > 0) {
      budget.left--
      toRead.push(uid)
    } else answers.set(uid, {kind: 'unknown', why: `not asked: at most ${HISTORY_LIMITS.readsPerRun} history reads per run`})
  }

  // The run's time for history reads: past it, the reads under way are abandoned (a TIMEOUT: trouble, see below).
  const msLeft = budget.msLeft ?? HISTORY_LIMITS.runMs
  const outOfTime = new AbortController()
  const spend = () => outOfTime.abort(new TargonError('TIMEOUT', `history reads took this run's ${HISTORY_LIMITS.runMs / 1000} s`))
  if (msLeft <= 0) spend()
  const timer = setTimeout(spend, Math.max(0, msLeft))
  const userSignal = client.http.options.signal
  const reader = client.withSignal(userSignal ? AbortSignal.any([userSignal, outOfTime.signal]) : outOfTime.signal)
  // The budget's timer above is a real one: what it spent is measured on the real clock too.
  const spent = stopwatch(REAL_CLOCK)
  // Once the API is in trouble, each read still queued would wait out the same retries: they are not sent.
  let trouble = false
  try {
    await mapBounded(toRead, HISTORY_LIMITS.inFlight, async (uid) => {
      if (trouble || outOfTime.signal.aborted) {
        const why = outOfTime.signal.aborted
          ? "this run's time for history reads is spent"
          : 'the history did not answer for another workload'
        answers.set(uid, {kind: 'unknown', why: `not asked: ${why}`})
        return
      }
      const answer = await readHistory(reader, org, uid, now)
      if (answer.kind === 'unknown' && answer.trouble) trouble = true
      answers.set(uid, answer)
      // API trouble says nothing of this workload: nothing is kept, and the next run asks again.
      if (answer.kind === 'unknown' && answer.trouble) return
      try {
        state.writeHistoryVerdict(org, verdictOf(uid, answer, now))
      } catch {
        // Not kept: the next run asks again.
      }
    })
  } finally {
    clearTimeout(timer)
    budget.msLeft = msLeft - spent()
  }
  return answers
}

function answerOf(verdict: HistoryVerdict): HistoryAnswer {
  if (verdict.verdict === 'crashed') return {kind: 'crashed'}
  const at = verdict.deleted_at === null ? Number.NaN : Date.parse(verdict.deleted_at)
  if (verdict.verdict === 'deleted' && !Number.isNaN(at)) return {at, kind: 'deleted'}
  return {kind: 'unknown', why: 'the history could not tell within the last hour'}
}

/** The record of a kept verdict is listed now: its 30 days after leaving the listing start later (see local-state). */
function noteListed(state: LocalState, org: string, verdict: HistoryVerdict, now: number): void {
  const lastListed = Date.parse(verdict.last_listed_at ?? verdict.asked_at)
  if (now - lastListed < HISTORY_LIMITS.listedEveryMs) return
  try {
    state.writeHistoryVerdict(org, {...verdict, last_listed_at: new Date(now).toISOString()})
  } catch {
    // Not kept: the verdict may be dropped a day early, and is then asked again if the record is still listed.
  }
}

function verdictOf(uid: string, answer: HistoryAnswer, now: number): HistoryVerdict {
  return {
    asked_at: new Date(now).toISOString(),
    deleted_at: answer.kind === 'deleted' ? new Date(answer.at).toISOString() : null,
    last_listed_at: new Date(now).toISOString(),
    uid,
    verdict: answer.kind,
  }
}
