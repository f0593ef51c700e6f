/** The JSON contract of one deletion, as down, sweep and up's clean-up report it, and why a VM is deleted. */
import * as z from 'zod'

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

export const DELETE_REASONS = ['ttl', 'idle', 'max-cost', 'over-cost', 'down'] as const
export type DeleteReason = (typeof DELETE_REASONS)[number]

export const HookOutcomeSchema = z
  .object({
    status: z
      .enum(['ok', 'failed', 'timed-out', 'interrupted', 'unreachable', 'unknown-here'])
      .describe(
        'unreachable: the VM (or its stored hook) could not be reached, so it was deleted without its hook; unknown-here: this config directory has no record of the VM, so whether it has a hook is not known here, and it was deleted without running one',
      ),
    exit_code: z.number().int().nullable().describe('the exit code of the hook on the VM; null when it did not end by itself'),
    duration_ms: z.number().int().nonnegative(),
    output_tail: z
      .string()
      .describe('the last lines of its output (stdout and stderr), at most 20 lines or 4 KiB, control characters removed'),
    detail: z.string().nullable().describe('why it did not succeed, for a person; null when it did'),
  })
  .describe('the pre-delete hook (up --on-delete) run on the VM before its deletion; the deletion went on whatever it did')
export type HookOutcome = z.infer<typeof HookOutcomeSchema>

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
})
export type DeleteResult = z.infer<typeof DeleteResultSchema>
