/** The pieces of targon sweep that are logic alone: which limit a VM reached, and where its heartbeat goes. */
import {mkdtempSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {limitReached} from '../../src/lib/workflows/down/selection.js'
import type {KnownVm} from '../../src/lib/domain/fleet/fleet-read.js'
import {failUrl, pingSucceeds} from '../../src/lib/adapters/notify/heartbeat.js'
import {configDir} from '../../src/lib/adapters/settings/resolve.js'
import {dueWarnings, extendCommand, unsent, raisedBudget} from '../../src/lib/workflows/sweep/warnings.js'

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

describe('warnings before a limit fires', () => {
  const MIN = 60_000
  /** A sweep of the default config directory and profile, with no owner set. */
  const HERE = {configDir: configDir({}), owner: null, profile: 'default'}
  it('warns of a TTL or budget inside the window, and of an idle deadline only while the VM is idle', () => {
    const ttl = vm(HOUR, {ttl_expires_at: new Date(NOW + 10 * MIN).toISOString()})
    // 2 USD/h, 5 USD: spent 2.5 h after creation, 10 minutes from now.
    const budget = {...vm(2.5 * HOUR - 10 * MIN, {max_cost_usd: 5}), uid: 'wrk-b'}
    const far = {...vm(HOUR, {ttl_expires_at: new Date(NOW + 20 * MIN).toISOString()}), uid: 'wrk-c'}
    const idle = {...vm(HOUR, {}), uid: 'wrk-d'}
    const due = dueWarnings([ttl, budget, far, idle], new Map([['wrk-d', {idleSeconds: 25 * 60, limitS: 30 * 60}]]), NOW, 15 * MIN, HERE)
    expect(due.map((each) => `${each.uid} ${each.limit} ${(Date.parse(each.fires_at) - NOW) / MIN}`)).toEqual([
      'wrk-a ttl 10',
      'wrk-b max-cost 10',
      'wrk-d idle 5',
    ])
    // The budget's command raises it by an hour at 2 USD/h; --by would move its TTL and leave the budget as it was.
    expect(due[1]?.extend_command).toBe('targon extend tcli-default-a --max-cost 7')
    expect(due[2]).toMatchObject({
      extend_command: 'targon extend tcli-default-a --by 1h --idle-only',
      idle_since: new Date(NOW - 25 * MIN).toISOString(),
    })
    // Busy (no idle entry), or a TTL already past (the sweep deletes it): nothing to warn of.
    expect(
      dueWarnings([idle, {...vm(HOUR, {ttl_expires_at: new Date(NOW - 1).toISOString()}), uid: 'wrk-e'}], new Map(), NOW, 15 * MIN, HERE),
    ).toEqual([])
  })

  it('sends each VM and deadline once, again for a moved deadline, and once per idle stretch', () => {
    const dir = mkdtempSync(join(tmpdir(), 'targon-warned-'))
    const ttlAt = (minutes: number) => vm(HOUR, {ttl_expires_at: new Date(NOW + minutes * MIN).toISOString()})
    const idleFor = (now: number, seconds: number) =>
      dueWarnings([vm(HOUR, {})], new Map([['wrk-a', {idleSeconds: seconds, limitS: 1800}]]), now, 15 * MIN, HERE)
    const send = (due: ReturnType<typeof dueWarnings>) => {
      const {fresh, remember} = unsent(dir, 'default', 'acme', due)
      remember(new Set(['wrk-a']), fresh)
      return fresh.length
    }

    expect(send(dueWarnings([ttlAt(10)], new Map(), NOW, 15 * MIN, HERE))).toBe(1)
    expect(send(dueWarnings([ttlAt(10)], new Map(), NOW + MIN, 15 * MIN, HERE))).toBe(0)
    expect(send(dueWarnings([ttlAt(12)], new Map(), NOW + MIN, 15 * MIN, HERE))).toBe(1)
    // Idle 25 min of 30; a minute later, the same stretch (its start moved by sampling only); then busy, idle anew.
    expect(send(idleFor(NOW, 25 * 60))).toBe(1)
    expect(send(idleFor(NOW + MIN, 26 * 60 - 30))).toBe(0)
    expect(send(idleFor(NOW + 20 * MIN, 20 * 60))).toBe(1)
  })
})

describe('the extend command of a warning', () => {
  const HERE = {configDir: configDir({}), owner: null, profile: 'default'}
  const ttl = vm(HOUR, {ttl_expires_at: new Date(NOW + 10 * 60_000).toISOString()})

  it('is bare for the default config directory and profile, and a VM of no owner or the sweep owner', () => {
    expect(extendCommand(ttl, 'ttl', HERE)).toBe('targon extend tcli-default-a --by 1h --ttl-only')
    expect(extendCommand({...ttl, owner: 'alice'}, 'idle', {...HERE, owner: 'alice'})).toBe(
      'targon extend tcli-default-a --by 1h --idle-only',
    )
  })

  it('raises a budget by what the VM costs in the postponement, rounded up to cents, instead of moving its TTL', () => {
    const budget = vm(HOUR, {max_cost_usd: 10})
    // 2 USD/h for an hour on top of 10 USD.
    expect(extendCommand(budget, 'max-cost', HERE)).toBe('targon extend tcli-default-a --max-cost 12')
    // A 90-minute window at 1.69 USD/h: 2.535 USD, rounded up to cents.
    const cheap = {...budget, workload: {...budget.workload, cost_per_hour: 1.69}}
    expect(extendCommand(cheap, 'max-cost', HERE, 90 * 60_000)).toBe('targon extend tcli-default-a --max-cost 12.54')
    expect(raisedBudget(10, 0.5, HOUR)).toBe(10.5)
    expect(raisedBudget(0.1, 0.2, HOUR)).toBe(0.3)
    // The TTL moves by the same window.
    expect(extendCommand(ttl, 'ttl', HERE, 90 * 60_000)).toBe('targon extend tcli-default-a --by 90m --ttl-only')
  })

  it('names the config directory, the profile and --any-owner when a pasted command needs them, shell-quoted', () => {
    const place = {configDir: "/srv/guard's dir", owner: 'bob', profile: 'team-a'}
    expect(extendCommand({...ttl, owner: 'alice'}, 'idle', place)).toBe(
      `TARGON_CONFIG_DIR='/srv/guard'\\''s dir' targon extend tcli-default-a --by 1h --idle-only --profile team-a --any-owner`,
    )
    // An owner that could not be read is refused by extend without --any-owner.
    expect(extendCommand({...ttl, owner: undefined}, 'ttl', {...HERE, configDir: '/srv/targon'})).toBe(
      'TARGON_CONFIG_DIR=/srv/targon targon extend tcli-default-a --by 1h --ttl-only --any-owner',
    )
  })

  it('quotes a name the shell would split, and names by uid one that would read as a flag', () => {
    expect(extendCommand({...ttl, name: 'a b;rm -rf ~'}, 'ttl', HERE)).toBe("targon extend 'a b;rm -rf ~' --by 1h --ttl-only")
    expect(extendCommand({...ttl, name: '--any-owner'}, 'ttl', HERE)).toBe('targon extend wrk-a --by 1h --ttl-only')
  })
})
