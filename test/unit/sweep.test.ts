/** The pieces of targon sweep that are logic alone: which limit a VM reached, and where its heartbeat goes. */
import {describe, expect, it} from 'vitest'

import {limitReached} from '../../src/lib/down/down.js'
import type {KnownVm} from '../../src/lib/fleet/workloads.js'
import {failUrl, pingSucceeds} from '../../src/lib/notify/heartbeat.js'

const NOW = Date.parse('2026-12-01T12:00:00Z')
const HOUR = 3_600_000

/** A running VM created `ageMs` before NOW at 2 USD/h, with the limits of its local record. */
function vm(ageMs: number, limits: {ttl_expires_at?: string; max_cost_usd?: number}): KnownVm {
  return {
    billing: true,
    billingAssumed: false,
    fleet: 'default',
    gone: false,
    name: 'tcli-default-a',
    owned: true,
    owner: null,
    record: {max_cost_usd: null, ttl_expires_at: null, ...limits} as KnownVm['record'],
    status: 'running',
    uid: 'wrk-a',
    workload: {
      cost_per_hour: 2,
      created_at: new Date(NOW - ageMs).toISOString(),
      name: 'tcli-default-a',
      uid: 'wrk-a',
    },
  }
}

describe('limitReached', () => {
  it('says ttl once the TTL is past, max-cost once the estimate reaches the budget, and nothing before', () => {
    expect(limitReached(vm(HOUR, {ttl_expires_at: new Date(NOW - 1).toISOString()}), NOW)).toBe('ttl')
    expect(limitReached(vm(HOUR, {ttl_expires_at: new Date(NOW + 60_000).toISOString()}), NOW)).toBeNull()
    // 2 USD/h for 3 h: 6 USD, over a budget of 5; within one of 7.
    expect(limitReached(vm(3 * HOUR, {max_cost_usd: 5}), NOW)).toBe('max-cost')
    expect(limitReached(vm(3 * HOUR, {max_cost_usd: 7}), NOW)).toBeNull()
    // The same VM a minute later, on the same clock: its TTL has come.
    const soon = vm(3 * HOUR, {max_cost_usd: 7, ttl_expires_at: new Date(NOW + 30_000).toISOString()})
    expect(limitReached(soon, NOW + 60_000)).toBe('ttl')
    expect(limitReached(vm(HOUR, {}), NOW)).toBeNull()
  })
})

describe('heartbeat', () => {
  it('pings the URL on exit 0 and 14 and URL/fail on any other exit, the query string kept', () => {
    expect([0, 14].every(pingSucceeds)).toBe(true)
    expect([1, 2, 3, 5, 11, 130, 143].some(pingSucceeds)).toBe(false)
    expect(failUrl('https://hc-ping.com/0f3a')).toBe('https://hc-ping.com/0f3a/fail')
    expect(failUrl('https://hc-ping.com/0f3a/')).toBe('https://hc-ping.com/0f3a/fail')
    expect(failUrl('https://mon.example/p/k?rid=1')).toBe('https://mon.example/p/k/fail?rid=1')
  })
})
