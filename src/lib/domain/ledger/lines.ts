/**
 * The lines of the spend ledger, one JSON object each: a VM's billing start, sightings of it, an `error` record of it
 * nobody here classified, its end; the org's credit readings; and the months pruned. Written by store.ts, read into
 * intervals by intervals.ts.
 *
 * The kinds, field names and values are what the files hold, and files outlive the version that wrote them: they are
 * never renamed, only added to (test/unit/ledger-first-version.test.ts reads a file of the first version). Where the
 * code names them otherwise: a `seen` line is a sighting, a `stop` line's `how` is its end source (BILLING_END_SOURCES).
 */
import * as z from 'zod'

import {BILLING_END_SOURCES, BILLING_START_SOURCES, VmFactsSchema} from './schema.js'

const time = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'is not a time')

export const LedgerLineSchema = z.discriminatedUnion('kind', [
  /** Billing began at `at`. */
  VmFactsSchema.extend({kind: z.literal('start'), uid: z.string(), at: time, source: z.enum(BILLING_START_SOURCES), recorded_at: time}),
  /** A sighting: these VMs were seen billing at `at` (one line per listing, throttled; see SIGHTING_EVERY_MS in intervals.ts). */
  z.object({kind: z.literal('seen'), uids: z.array(z.string()), at: time}),
  /**
   * Listed at `at` as an `error` record nobody here has classified (a crash, or the tombstone of a deletion made
   * elsewhere), last changed at `updated_at`: should it vanish, that is when it was deleted.
   */
  z.object({kind: z.literal('unclear'), uid: z.string(), at: time, updated_at: time}),
  /** Billing ended at `at`, as found at `recorded_at` (for `last-seen`, the end lies between the two). */
  z.object({kind: z.literal('stop'), uid: z.string(), at: time, how: z.enum(BILLING_END_SOURCES), recorded_at: time}),
  /** The org's credits as GET credits answered at `at`. */
  z.object({kind: z.literal('credits'), at: time, credits: z.number(), currency: z.string().nullable()}),
  /** Months up to `through` (YYYY-MM) were deleted as older than the retention. */
  z.object({kind: z.literal('pruned'), at: time, through: z.string().regex(/^\d{4}-\d{2}$/)}),
])
export type LedgerLine = z.infer<typeof LedgerLineSchema>
