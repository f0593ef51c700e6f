/** What targon sweep shows and sends, from its result alone. */
import {describe, expect, it} from 'vitest'

import {sweepLines, sweepNotices, warningNotice} from '../../src/lib/cli/render/sweep.js'
import type {SweepResult} from '../../src/lib/workflows/sweep/schema.js'

/** A sweep of acme that deleted one VM past its TTL and left another billing. */
function swept(extra: Partial<SweepResult> = {}): SweepResult {
  return {
    dry_run: false,
    dstack_sync: null,
    kept: [],
    not_covered: [],
    org: 'acme',
    results: [
      {action: 'deleted', billing: false, name: 'tcli-default-a', reason: 'ttl', uid: 'wrk-a'},
      {action: 'delete-failed', billing: true, name: 'tcli-default-b', reason: 'max-cost', uid: 'wrk-b'},
    ],
    runway: null,
    selection: {
      any_owner: false,
      default_ttl_seconds: null,
      fleet: null,
      idle_limit_seconds: null,
      min_runway_hours: 6,
      over_cost_usd: null,
      owner: 'alice',
      team: false,
    },
    skipped: null,
    survivors: ['wrk-b'],
    unlimited: [],
    warned: [],
    ...extra,
  } as SweepResult
}

describe('sweepNotices', () => {
  it('tells what was deleted and what still bills, to the owner the sweep ran as', () => {
    expect(sweepNotices(swept(), 11)).toEqual([
      {
        event: 'sweep-deleted',
        facts: {
          exitCode: 11,
          owner: 'alice',
          stillBilling: ['wrk-b'],
          vms: [
            {name: 'tcli-default-a', uid: 'wrk-a'},
            {name: 'tcli-default-b', uid: 'wrk-b'},
          ],
        },
        text: 'targon sweep deleted 1 VM in acme: tcli-default-a (ttl); STILL BILLING: wrk-b (targon down wrk-b)',
      },
    ])
  })

  it('adds the short runway, and sends nothing for a dry run or a sweep that changed nothing', () => {
    const short = {exitCode: 14, message: 'the credits of acme last about 2h at 3.00 USD/h, less than 6h'}
    const quiet = swept({results: [], survivors: []})
    expect(sweepNotices(quiet, 14, short)).toEqual([
      {
        event: 'runway-short',
        facts: {exitCode: 14, owner: 'alice', vms: []},
        text: 'targon sweep: the credits of acme last about 2h at 3.00 USD/h, less than 6h',
      },
    ])
    expect(sweepNotices(quiet, 0)).toEqual([])
    expect(sweepNotices(swept({dry_run: true}), 11, short)).toEqual([])
  })
})

describe('warningNotice', () => {
  it("names the VM, its owner, the deadline, the limit and the command that postpones it, sent to the VM's owner", () => {
    const notice = warningNotice({
      extend_command: 'targon extend tcli-default-a --ttl 1h',
      fires_at: '2026-12-01T12:15:30.000Z',
      idle_since: '2026-12-01T11:00:00.000Z',
      limit: 'idle',
      name: 'tcli-default-a',
      owner: 'bob',
      price_per_hour: 2,
      uid: 'wrk-a',
    })
    expect(notice).toEqual({
      event: 'sweep-warning',
      facts: {exitCode: 0, owner: 'bob', vms: [{name: 'tcli-default-a', uid: 'wrk-a'}]},
      text: 'targon sweep: tcli-default-a (owner bob) will be deleted at 2026-12-01T12:15Z by its idle limit unless it gets busy, at 2.00 USD/h; to postpone it: targon extend tcli-default-a --ttl 1h',
    })
  })
})

describe('sweepLines', () => {
  it('puts the result on stdout, and that nothing was past a limit on stderr, in the order they are printed', () => {
    const lines = sweepLines(
      swept({
        kept: [{name: 'tcli-default-c', reason: 'busy', state: 'busy', uid: 'wrk-c'}] as SweepResult['kept'],
        not_covered: [{name: null, owner: 'bob', reason: 'unreachable', uid: 'wrk-d'}],
        results: [],
        runway: {burn_usd_per_hour: 3, credits: 6, runway_ends_at: null, runway_hours: 2, short: true},
        unlimited: [{name: 'other-vm', origin: 'other', price_per_hour: null, uid: 'wrk-e'}],
      }),
    )
    expect(lines).toEqual([
      {out: 'kept tcli-default-c (busy): busy'},
      {info: 'Nothing past a limit.'},
      {out: 'no limit: other-vm (wrk-e), not made by targon, price unknown'},
      {out: 'not covered: wrk-d of bob: limits unknown, unreachable'},
      {out: 'Runway: 2h at 3.00 USD/h (SHORT)'},
    ])
  })
})
