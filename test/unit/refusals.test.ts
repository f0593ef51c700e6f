/** How a refusal from Targon is read: by its reason first, its HTTP status second. */
import {describe, expect, it} from 'vitest'

import {refusalCode, refusalKind} from '../../src/lib/adapters/targon/refusals.js'

describe('refusalKind', () => {
  it('takes a capacity reason as capacity whatever the status, on any workload type', () => {
    for (const reason of ['WORKLOAD_VM_NO_CAPACITY', 'WORKLOAD_SANDBOX_UNAVAILABLE', 'WORKLOAD_VM_NO_HOST_PORTS', 'NO_CAPACITY'])
      for (const status of [409, 500, 503]) expect(refusalKind(status, reason), `${status} ${reason}`).toBe('capacity')
  })

  it('reads credits from the reason, a 402, or the text when no reason says otherwise', () => {
    expect(refusalKind(400, 'INSUFFICIENT_CREDITS')).toBe('credits')
    expect(refusalKind(402, undefined)).toBe('credits')
    expect(refusalKind(400, undefined, 'not enough credit on the account')).toBe('credits')
    // The text is only a hint: a reason that names something else wins.
    expect(refusalKind(400, 'INVALID_JSON_BODY', 'credit')).toBe('other')
  })

  it('tells a quota from a rate limit among 429s', () => {
    expect(refusalKind(429, 'WORKLOAD_VM_SESSION_LIMIT')).toBe('quota')
    expect(refusalKind(429, 'RATE_LIMITED')).toBe('rate-limit')
    expect(refusalKind(429, 'RATE_LIMIT_EXCEEDED')).toBe('rate-limit')
    expect(refusalKind(429, undefined)).toBe('rate-limit')
  })

  it('takes TEMPORARY and a 5xx without a refusal reason as transient, and a 409 as a state conflict', () => {
    expect(refusalKind(503, 'TEMPORARY')).toBe('transient')
    expect(refusalKind(503, undefined)).toBe('transient')
    expect(refusalKind(502, undefined, '<html>Bad Gateway</html>')).toBe('transient')
    expect(refusalKind(409, 'WORKLOAD_VM_INVALID_STATE')).toBe('conflict')
    expect(refusalKind(409, 'WORKLOAD_VM_NOT_DEPLOYED')).toBe('conflict')
    expect(refusalKind(400, 'INVALID_JSON_BODY')).toBe('other')
  })

  it('gives final refusals their error codes', () => {
    expect(refusalCode('capacity')).toBe('NO_CAPACITY')
    expect(refusalCode('credits')).toBe('INSUFFICIENT_CREDITS')
    expect(refusalCode('quota')).toBe('QUOTA_EXCEEDED')
    expect(refusalCode('transient')).toBeUndefined()
    expect(refusalCode('conflict')).toBeUndefined()
  })
})
