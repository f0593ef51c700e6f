/**
 * What a refusal from Targon means, decided in this one place from its `reason` first and its HTTP status second
 * (the message text is a hint only, except that it may still mark a credit refusal that no reason names).
 *
 * Reasons follow `WORKLOAD_<TYPE>_<CONDITION>`, and one condition can come with different statuses:
 * - capacity: `…_NO_CAPACITY`, `…_UNAVAILABLE`, `…_NO_HOST_PORTS`, whatever the status, already on a create (503 in
 *   the official SDK's tests): nothing was created; try the next offer, or wait;
 * - credits: a reason with CREDIT, or 402;
 * - quota: a 429 whose reason names a limit (`…_SESSION_LIMIT`), not a rate limit: final;
 * - conflict: a 409 (`…_INVALID_STATE`, `…_NOT_DEPLOYED`, `…_CREATE_CONFLICT`): read the state and act on it;
 * - transient: `TEMPORARY`, a 5xx without a refusal reason (a gateway's bare 503 or HTML page), a plain 429.
 */
import type {ErrorCode} from '../../core/errors.js'

export type RefusalKind = 'capacity' | 'conflict' | 'credits' | 'other' | 'quota' | 'rate-limit' | 'transient'

export function refusalKind(status: number, reason: string | undefined, message = ''): RefusalKind {
  const code = (reason ?? '').toUpperCase()
  if (/(^|_)(NO_CAPACITY|UNAVAILABLE|NO_HOST_PORTS)$/.test(code)) return 'capacity'
  if (code.includes('CREDIT') || status === 402 || (code === '' && /\bcredit/i.test(message))) return 'credits'
  if (status === 429) return code.endsWith('_LIMIT') && !code.includes('RATE_LIMIT') ? 'quota' : 'rate-limit'
  if (code === 'TEMPORARY') return 'transient'
  if (status === 409) return 'conflict'
  if (status >= 500) return 'transient'
  return 'other'
}

/** The error code of a refusal that is final for the offer or the run; undefined for the others. */
export function refusalCode(kind: RefusalKind): ErrorCode | undefined {
  return kind === 'capacity' ? 'NO_CAPACITY' : kind === 'credits' ? 'INSUFFICIENT_CREDITS' : kind === 'quota' ? 'QUOTA_EXCEEDED' : undefined
}
