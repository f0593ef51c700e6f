/** The JSON contract of one deletion, as down, sweep and up's clean-up report it, and why a VM is deleted. */
import * as z from 'zod'

import {EndedJobSchema, HookOutcomeSchema} from '../../adapters/events/schema.js'

export const DELETE_ACTIONS = [
  'deleted',
  'woken-and-deleted',
  'already-gone',
  'left-registered',
  'would-delete',
  'not-attempted',
  'failed',
  'still-present',
  'invalid-answer',
] as const
export type DeleteAction = (typeof DELETE_ACTIONS)[number]

export const DELETE_REASONS = ['ttl', 'idle', 'max-cost', 'over-cost', 'down', 'job-done'] as const
export type DeleteReason = (typeof DELETE_REASONS)[number]

/** What the deletion did in dstack first (workflows/dstack/leave.ts). */
export const DSTACK_LEAVE_OUTCOMES = ['removed', 'not-in-fleet', 'busy-forced', 'busy-after-wait', 'unreachable', 'failed'] as const
export type DstackLeaveOutcome = (typeof DSTACK_LEAVE_OUTCOMES)[number]

export const DeleteResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  action: z
    .enum(DELETE_ACTIONS)
    .describe(
      'woken-and-deleted: suspended or crashed, so deployed first, then deleted; left-registered: never deployed, Targon refuses to delete it, it does not run; invalid-answer: a listed item that failed the checks of the API answer (it may bill; name its exact uid to delete it)',
    ),
  billing: z.boolean().nullable().describe('whether it still costs money; null: not known'),
  error: z.string().optional(),
  hook: HookOutcomeSchema.optional().describe(
    'present when the VM has a pre-delete hook and down or sweep tried to run it, or (unknown-here) when this directory cannot tell whether it has one; never under --dry-run or --no-hooks',
  ),
  ended_jobs: z
    .array(EndedJobSchema)
    .nullable()
    .optional()
    .describe(
      "down and sweep: the jobs of targon run running on the VM just before its deletion (after its hook), which a deletion that went through ended (with --dry-run: those it would end); [] when none ran (or the VM was not running); null when they could not be read in time (the VM was deleted all the same); absent elsewhere (up's clean-up, run --down)",
    ),
  dstack: z
    .enum(DSTACK_LEAVE_OUTCOMES)
    .optional()
    .describe(
      'down and sweep with a dstack server configured: what happened in dstack before the deletion. removed: taken out of its targon-* dstack fleet; not-in-fleet: no targon-* dstack fleet held it; busy-forced: it ran a dstack job and --force deleted it at once; busy-after-wait: it still ran a dstack job when the wait (the hook budget) ended, or an interrupt came; unreachable: dstack did not answer; failed: dstack answered with an error. In every case but removed and not-in-fleet the VM was deleted all the same, with a warning, and the next targon dstack sync takes it out of the fleet. Absent without dstack, under --dry-run, and for a VM that was already gone',
    ),
})
export type DeleteResult = z.infer<typeof DeleteResultSchema>
