/**
 * `targon cost`'s request: its range flags, read against the time the run started, into the range and grouping of
 * the report, or the usage error (exit 2) that refuses them.
 */
import {usageError} from '../../core/errors.js'
import {validateFleet} from '../../adapters/settings/table.js'
import type {CostGrouping} from '../../workflows/spend/schema.js'

/** --since without --from: the last 7 days. */
const DEFAULT_SINCE_MS = 7 * 86_400_000

export interface CostFlags {
  since?: number
  from?: number
  to?: number
  fleet?: string
  by: CostGrouping
  'show-deleted': boolean
  reconcile: boolean
}

export interface CostRequest {
  from: number
  /** The end of the range as given; null: now. */
  to: number | null
  fleet: string | null
  by: CostGrouping
  /** --reconcile. */
  checkCredits: boolean
  showDeleted: boolean
}

export function parseCostRequest(flags: CostFlags, now: number): CostRequest {
  if (flags.from !== undefined && flags.since !== undefined)
    throw usageError('--since and --from cannot be combined', 'give a span with --since (and --to), or a range with --from and --to')
  const to = flags.to ?? now
  const from = flags.from ?? to - (flags.since ?? DEFAULT_SINCE_MS)
  if (from >= now) throw usageError(`--from ${new Date(from).toISOString()} is not in the past`, 'give a start before now')
  if (from >= to) throw usageError('--from must come before --to', 'give an earlier --from or a later --to')
  return {
    by: flags.by,
    checkCredits: flags.reconcile,
    fleet: flags.fleet === undefined ? null : validateFleet(flags.fleet),
    from,
    showDeleted: flags['show-deleted'],
    to: flags.to ?? null,
  }
}
