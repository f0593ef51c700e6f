/** Amending an error keeps every field that is not changed. */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'

describe('TargonError.with', () => {
  it('changes what it is given and keeps the code, request id, reason, resource, details, data and signal', () => {
    const cause = new Error('socket')
    const original = new TargonError('NO_CAPACITY', 'sold out', {
      cause,
      data: {vms: []},
      details: {offer: 'rtx6000b-small'},
      hint: 'try later',
      httpStatus: 503,
      reason: 'WORKLOAD_VM_NO_CAPACITY',
      requestId: 'req-1',
      resource: {name: 'tcli-a-b', uid: 'wrk-1'},
      signal: 'SIGINT',
    })
    const amended = original.with({hint: 'raise --wait', message: 'sold out; --wait 1m ran out'})
    expect(amended).toBeInstanceOf(TargonError)
    expect(amended).toMatchObject({
      code: 'NO_CAPACITY',
      data: {vms: []},
      details: {offer: 'rtx6000b-small'},
      hint: 'raise --wait',
      httpStatus: 503,
      message: 'sold out; --wait 1m ran out',
      reason: 'WORKLOAD_VM_NO_CAPACITY',
      requestId: 'req-1',
      resource: {name: 'tcli-a-b', uid: 'wrk-1'},
      signal: 'SIGINT',
    })
    expect(amended.cause).toBe(cause)
    expect(original.message).toBe('sold out')
  })
})
