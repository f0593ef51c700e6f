/** up's texts, from its typed results: the notifications, the warnings it words, and what an exit leaves. */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {cleanupNote, forcedExitLines, upNotification, upWarningText} from '../../src/lib/cli/render/up.js'
import {unguardedText} from '../../src/lib/cli/render/unguarded.js'
import type {UpPlanAsk} from '../../src/lib/workflows/up/plan.js'
import type {UpResult} from '../../src/lib/workflows/up/schema.js'

const ASK = {
  bootstrap: null,
  gpu: undefined,
  maxCostUsd: undefined,
  owner: 'ana',
  resource: 'rtx6000b-small',
  ttlMs: undefined,
} as UpPlanAsk

/** A run that failed: one VM rolled back, one still billing at 1.69 USD/h. */
function failed(code: 'INTERRUPTED' | 'TIMEOUT'): TargonError {
  return new TargonError(code, code === 'INTERRUPTED' ? 'interrupted by SIGINT' : 'targon up did not finish within --timeout 60m', {
    data: {
      cleanup: {
        attempted: true,
        results: [
          {action: 'deleted', billing: false, name: 'targon-a', uid: 'u1'},
          {action: 'still-present', billing: true, name: 'targon-b', uid: 'u2'},
        ],
        survivors: ['u2'],
      },
      vms: [{price_per_hour: 1.69, uid: 'u2'}],
    },
  })
}

describe('up: the notifications', () => {
  it('capacity found: what was asked for', () => {
    expect(upNotification({ask: ASK, kind: 'capacity-found'})).toEqual({
      event: 'capacity-found',
      facts: {exitCode: 0, owner: 'ana', vms: []},
      text: 'targon up: capacity found after waiting (rtx6000b-small)',
    })
    expect(upNotification({ask: {...ASK, gpu: 'h200', resource: undefined}, kind: 'capacity-found'}).text).toContain('(a h200)')
  })

  it('ready: the VMs, their price and owner, and what bills', () => {
    const result = {org: 'acme', vms: [{name: 'targon-a', price_per_hour: 1.5, uid: 'u1'}]} as unknown as UpResult
    expect(upNotification({kind: 'ready', owner: 'ana', result, stillBilling: ['u1', 'u9']})).toEqual({
      event: 'up-ready',
      facts: {exitCode: 0, owner: 'ana', stillBilling: ['u1', 'u9'], vms: [{name: 'targon-a', uid: 'u1'}]},
      text: 'targon up: 1 VM ready in acme: targon-a (1.50 USD/h; owner ana)',
    })
  })

  it('failed or interrupted: what was rolled back and what still bills', () => {
    const timeout = upNotification({error: failed('TIMEOUT'), kind: 'failed', owner: 'ana'})
    expect(timeout.event).toBe('up-failed')
    expect(timeout.text).toBe(
      'targon up failed (TIMEOUT): targon up did not finish within --timeout 60m; rolled back: u1; STILL BILLING: u2 (1.69 USD/h; owner ana; targon down u2)',
    )
    expect(timeout.facts).toEqual({
      exitCode: failed('TIMEOUT').exitCode,
      owner: 'ana',
      stillBilling: ['u2'],
      vms: [
        {name: 'targon-a', uid: 'u1'},
        {name: 'targon-b', uid: 'u2'},
      ],
    })
    const interrupted = upNotification({error: failed('INTERRUPTED'), kind: 'failed', owner: null})
    expect(interrupted.event).toBe('interrupted-billing')
    expect(interrupted.text).toMatch(/^targon up was interrupted \(INTERRUPTED\): interrupted by SIGINT; /)
  })
})

describe('up: the warnings and exit lines', () => {
  it('a VM that failed, rolled back or not', () => {
    const failure = {error: {code: 'TIMEOUT', message: 'too slow'}, name: null, uid: 'u1'}
    expect(upWarningText({failure, kind: 'vm-failed', rolledBack: true})).toBe('a VM failed and was rolled back: too slow')
    expect(upWarningText({failure: {...failure, name: 'targon-a'}, kind: 'vm-failed', rolledBack: false})).toBe('targon-a failed: too slow')
  })

  it('no guard covers the VMs: the limits nothing enforces, in the one wording run shares', () => {
    const then = 'run targon guard install --team on an always-on machine (or targon guard install --cron here)'
    expect(upWarningText({ask: ASK, kind: 'unguarded'})).toBe(`no guard covers the VMs this run made: ${then}`)
    const limited = {...ASK, bootstrap: {idle: {limitMs: 60_000}}, maxCostUsd: 20, ttlMs: 3_600_000} as UpPlanAsk
    expect(upWarningText({ask: limited, kind: 'unguarded'})).toBe(
      `no guard covers the VMs this run made, so nothing enforces --ttl, --max-cost, --idle: ${then}`,
    )
    expect(unguardedText({then: 'do this', what: 'this config directory'})).toBe('no guard covers this config directory: do this')
  })

  it('the clean-up of a failed run, and nothing without one', () => {
    expect(cleanupNote(failed('TIMEOUT'))).toBe(
      'Clean-up:\n  deleted: targon-a (u1), no longer bills\n  still-present: targon-b (u2), STILL BILLS\n',
    )
    expect(cleanupNote(new TargonError('NO_CAPACITY', 'none'))).toBeUndefined()
    expect(cleanupNote(new Error('bug'))).toBeUndefined()
  })

  it('an exit without clean-up names what the run got hold of', () => {
    expect(forcedExitLines(['u1', 'u2'])).toEqual(['Exiting without clean-up. Still present: u1 u2', 'Delete with: targon down u1 u2'])
    expect(forcedExitLines([])).toEqual(['Exiting; nothing this run created is known to exist (run targon status to check).'])
  })
})
