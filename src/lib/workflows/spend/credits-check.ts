/**
 * The org's credits as read now (each reading kept in the ledger), and the credits check of `cost --reconcile`: the one
 * check of the estimates against what Targon charged. The drop in credits between two readings is put next to the estimate of
 * every VM the ledger knows, any fleet and any owner, over the same interval.
 */
import type {CreditsCheck} from './schema.js'
import {TargonError} from '../../core/errors.js'
import type {Clock} from '../../core/clock.js'
import {roundUsd} from '../../domain/fleet/estimates.js'
import {type Interval, billedWithin} from '../../domain/ledger/intervals.js'
import type {LedgerLine} from '../../domain/ledger/lines.js'
import type {LedgerStore} from '../../domain/ledger/store.js'
import type {TargonClient} from '../../adapters/targon/client.js'

/** A drop within this share of the larger of drop and estimate, or within a cent, counts as matching. */
const TOLERANCE = {absoluteUsd: 0.01, share: 0.05}
/** A reading this long before the range still opens it: a daily cron's reading lands a little before "now - 1d". */
const READING_GRACE_MS = 10 * 60_000

/** What a comparison of credits with estimates can never see. */
const ALWAYS_UNSEEN = [
  'other workload types (rentals, sandboxes, storage) draw on the same credits and are not listed as VMs',
  'VMs created and deleted between two listings made from this config directory were never seen',
  'top-ups, refunds and overage between the two readings',
]

export interface Reading {
  at: number
  credits: number
  currency: string | null
}

/** Reads the credits now and keeps the reading in the ledger. */
export async function readCredits(
  client: TargonClient,
  store: LedgerStore,
  warn: (message: string) => void,
  clock: Pick<Clock, 'now'>,
): Promise<Reading> {
  let answer
  try {
    answer = await client.getCredits(store.org)
  } catch (error) {
    if (error instanceof TargonError && error.code === 'AUTH')
      throw error.with({hint: "use an API key that may read the org's wallet (GET credits)"})
    if (error instanceof TargonError && error.code === 'NOT_FOUND')
      throw error.with({hint: 'this API answers no credits for the org: report it, with --verbose output'})
    throw error
  }

  const reading = {at: clock.now(), credits: answer.credits, currency: answer.currency ?? null}
  const unrecorded = store.append(
    [{at: new Date(reading.at).toISOString(), credits: reading.credits, currency: reading.currency, kind: 'credits'}],
    reading.at,
  )
  if (unrecorded) warn(unrecorded)
  return reading
}

export interface CreditsCheckRange {
  from: number
  to: number
  /** The range ends now (no --to in the past): this run's own reading closes it. */
  endsNow: boolean
  /** VMs whose end is unknown (the report's `excluded`): left out of the estimate, and said so. */
  excluded: ReadonlySet<string>
}

/**
 * Reads the credits now, then compares the earliest and the latest readings within the range (from a little before
 * `from` to `to`) with the estimate over the same interval.
 */
export async function checkAgainstCredits(
  client: TargonClient,
  store: LedgerStore,
  lines: readonly LedgerLine[],
  intervals: ReadonlyMap<string, Interval>,
  range: CreditsCheckRange,
  warn: (message: string) => void,
  clock: Pick<Clock, 'now'>,
): Promise<CreditsCheck> {
  const none = {
    credits_drop_usd: null,
    credits_from: null,
    credits_to: null,
    difference_usd: null,
    estimated_usd: null,
    from: null,
    to: null,
  }
  let now: Reading
  try {
    now = await readCredits(client, store, warn, clock)
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    warn(`the credits could not be read: ${error.message}`)
    return {...none, unseen: [], verdict: 'unreadable'}
  }

  const readings = [
    ...lines
      .flatMap((line) => (line.kind === 'credits' ? [{at: Date.parse(line.at), credits: line.credits}] : []))
      .filter((reading) => reading.at >= range.from - READING_GRACE_MS && reading.at <= range.to),
    ...(range.endsNow ? [{at: now.at, credits: now.credits}] : []),
  ].sort((a, b) => a.at - b.at)
  const [first, last] = [readings[0], readings.at(-1)]
  if (!first || !last || last.at <= first.at) return {...none, unseen: [], verdict: 'one-reading'}

  const counted = [...intervals.values()].filter(
    (interval) => !range.excluded.has(interval.uid) && billedWithin(interval, first.at, last.at, now.at) > 0,
  )
  const excluded = [...intervals.values()].filter(
    (interval) => range.excluded.has(interval.uid) && billedWithin(interval, first.at, last.at, now.at) > 0,
  ).length
  const unpriced = counted.filter((interval) => interval.price_per_hour === null).length
  const unconfirmed = counted.filter((interval) => interval.endSource === 'last-seen').length
  const estimate = roundUsd(
    counted.reduce(
      (sum, interval) => sum + (billedWithin(interval, first.at, last.at, now.at) / 3_600_000) * (interval.price_per_hour ?? 0),
      0,
    ),
  )
  const drop = roundUsd(first.credits - last.credits)
  const difference = roundUsd(drop - estimate)
  const within = Math.abs(difference) <= Math.max(TOLERANCE.absoluteUsd, TOLERANCE.share * Math.max(drop, estimate))
  const verdict = drop < 0 ? 'credits-rose' : drop === 0 && estimate > 0 ? 'credits-unchanged' : within ? 'matches' : 'differs'
  return {
    credits_drop_usd: drop,
    credits_from: first.credits,
    credits_to: last.credits,
    difference_usd: difference,
    estimated_usd: estimate,
    from: new Date(first.at).toISOString(),
    to: new Date(last.at).toISOString(),
    unseen: [
      ...ALWAYS_UNSEEN,
      ...(excluded > 0 ? [`${excluded} VM(s) whose end is unknown (excluded), left out of the estimate`] : []),
      ...(unpriced > 0 ? [`${unpriced} VM(s) without a price, counted as 0`] : []),
      ...(unconfirmed > 0 ? [`${unconfirmed} VM(s) whose end was not confirmed (bounded)`] : []),
    ],
    verdict,
  }
}
