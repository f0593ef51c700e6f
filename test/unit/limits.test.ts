/**
 * The limits a VM goes by: the stricter of its local record and the file it carries. A VM may tighten a limit, never
 * loosen one; what is known nowhere is unknown, never "no limit".
 */
import {describe, expect, it} from 'vitest'

import type {VmLimits, VmLimitsRead} from '../../src/lib/adapters/bootstrap/vm-limits.js'
import {VmLimitsSchema} from '../../src/lib/adapters/bootstrap/vm-limits.js'
import type {VmRecord} from '../../src/lib/adapters/state/local-state.js'
import {limitsFile, limitsOf, whyLimitsUnknown} from '../../src/lib/domain/fleet/limits.js'

const NOW = Date.parse('2026-12-07T12:00:00Z')
const at = (minutes: number) => new Date(NOW + minutes * 60_000).toISOString()

const record = (change: Partial<VmRecord> = {}): VmRecord => ({
  bootstrapped: true,
  created_at: at(-60),
  down_job: null,
  fleet: 'default',
  hook_timeout_s: null,
  host_key: null,
  idle_hold_until: null,
  idle_limit_s: 1800,
  max_cost_usd: 5,
  max_price: 1.8,
  name: 'tcli-default-a',
  on_delete_hook: false,
  org: 'acme',
  password: 'secret',
  resource: 'rtx6000b-small',
  ttl_expires_at: at(60),
  uid: 'wrk-a',
  ...change,
})

const carried = (change: Partial<VmLimits> = {}): VmLimitsRead => ({
  limits: {...limitsFile(record(), 'alice', NOW), ...change},
  state: 'read',
})

describe('the limits a VM goes by', () => {
  it('takes the stricter of each limit where both are known: the earlier deadline, the lower budget and idle limit', () => {
    const tighter = limitsOf({onVm: carried({idle_limit_seconds: 600, max_cost_usd: 1, ttl_expires_at: at(10)}), record: record()})
    expect(tighter).toMatchObject({idle_limit_seconds: 600, max_cost_usd: 1, source: 'both', ttl_expires_at: at(10)})
    // A file that says later, higher, or none at all loosens nothing of the record.
    const looser = limitsOf({
      onVm: carried({idle_hold_until: at(600), idle_limit_seconds: null, max_cost_usd: null, ttl_expires_at: at(600)}),
      record: record(),
    })
    expect(looser).toMatchObject({idle_hold_until: null, idle_limit_seconds: 1800, max_cost_usd: 5, source: 'both', ttl_expires_at: at(60)})
  })

  it('runs a hook and waits for a down job if either side says so', () => {
    const merged = limitsOf({onVm: carried({down_jobs: ['j-20261207-120000-abcdef'], on_delete_hook: true}), record: record()})
    expect(merged).toMatchObject({down_jobs: ['j-20261207-120000-abcdef'], on_delete_hook: true})
  })

  it('goes by the record alone when the file could not be read, and by the file alone without a record', () => {
    const unread: VmLimitsRead = {problem: 'its limits file fails the checks', state: 'malformed'}
    expect(limitsOf({onVm: unread, record: record()})).toMatchObject({max_cost_usd: 5, source: 'local'})
    expect(limitsOf({onVm: carried({max_cost_usd: 2}), record: undefined})).toMatchObject({max_cost_usd: 2, source: 'vm'})
  })

  it('knows nothing, rather than "no limit", of a VM without a record whose file is unread or sets no limit', () => {
    expect(limitsOf({onVm: undefined, record: undefined}).source).toBeNull()
    const none = carried({down_jobs: [], idle_limit_seconds: null, max_cost_usd: null, ttl_expires_at: null})
    expect(limitsOf({onVm: none, record: undefined}).source).toBeNull()
    expect(whyLimitsUnknown({onVm: none, status: 'running'})).toContain('sets no limit')
    expect(whyLimitsUnknown({onVm: {problem: 'refused', state: 'unreachable'}, status: 'running'})).toBe('refused')
  })

  it('writes a file that its own checks take, with nothing secret in it', () => {
    const file = limitsFile(record({down_job: 'j-20261207-120000-abcdef', on_delete_hook: true}), 'alice', NOW)
    expect(VmLimitsSchema.parse(file)).toEqual(file)
    expect(JSON.stringify(file)).not.toContain('secret')
    expect(VmLimitsSchema.safeParse({...file, ttl_expires_at: 'whenever'}).success).toBe(false)
    expect(VmLimitsSchema.safeParse({...file, down_jobs: ['$(reboot)']}).success).toBe(false)
  })
})
