/** `targon cost`'s request: its range flags and the run's start in, the report's range or its usage error out. */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {type CostFlags, type CostRequest, parseCostRequest} from '../../src/lib/cli/requests/cost.js'

const NOW = Date.parse('2026-12-07T12:00:00Z')
const DAY = 86_400_000
const DEFAULTS: CostFlags = {by: 'day', reconcile: false, 'show-deleted': false}
const LAST_WEEK: CostRequest = {by: 'day', checkCredits: false, fleet: null, from: NOW - 7 * DAY, showDeleted: false, to: null}

describe('parseCostRequest', () => {
  const refused: [string, Partial<CostFlags>, string, string][] = [
    [
      '--since with --from',
      {from: NOW - DAY, since: DAY},
      '--since and --from cannot be combined',
      'give a span with --since (and --to), or a range with --from and --to',
    ],
    ['a --from not in the past', {from: NOW}, '--from 2026-12-07T12:00:00.000Z is not in the past', 'give a start before now'],
    [
      'a --to in the future, --since reaching past now',
      {since: DAY, to: NOW + 2 * DAY},
      '--from 2026-12-08T12:00:00.000Z is not in the past',
      'give a start before now',
    ],
    ['--from after --to', {from: NOW - DAY, to: NOW - 2 * DAY}, '--from must come before --to', 'give an earlier --from or a later --to'],
    ['a bad fleet', {fleet: 'Bad Fleet'}, 'fleet "Bad Fleet" is not valid', 'use 1-12 lowercase letters or digits, e.g. train'],
  ]
  it.each(refused)('refuses %s (exit 2)', (_case, flags, message, hint) => {
    let thrown: unknown
    try {
      parseCostRequest({...DEFAULTS, ...flags}, NOW)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(TargonError)
    expect(thrown).toMatchObject({code: 'USAGE', exitCode: 2, hint, message})
  })

  const accepted: [string, Partial<CostFlags>, CostRequest][] = [
    ['the last 7 days by default', {}, LAST_WEEK],
    ['--since', {since: 30 * DAY}, {...LAST_WEEK, from: NOW - 30 * DAY}],
    ['--since up to --to', {since: DAY, to: NOW - DAY}, {...LAST_WEEK, from: NOW - 2 * DAY, to: NOW - DAY}],
    ['--from and --to', {from: NOW - 3 * DAY, to: NOW - DAY}, {...LAST_WEEK, from: NOW - 3 * DAY, to: NOW - DAY}],
    [
      'a fleet, a grouping, --reconcile and --show-deleted',
      {by: 'vm', fleet: 'train', reconcile: true, 'show-deleted': true},
      {...LAST_WEEK, by: 'vm', checkCredits: true, fleet: 'train', showDeleted: true},
    ],
  ]
  it.each(accepted)('takes %s', (_case, flags, request) => {
    expect(parseCostRequest({...DEFAULTS, ...flags}, NOW)).toStrictEqual(request)
  })
})
