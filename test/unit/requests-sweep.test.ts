/** The request of targon sweep: each row is flags and settings in, the request or the usage error out. */
import {describe, expect, it} from 'vitest'

import {DEFAULT_GUARD_WARN_MS, MAX_PARALLEL, type SweepFlags, type SweepSettings, sweepRequest} from '../../src/lib/cli/requests/sweep.js'
import type {SweepRequest} from '../../src/lib/workflows/sweep/request.js'
import {TargonError} from '../../src/lib/core/errors.js'

const MIN = 60_000
const HOUR = 60 * MIN

/** The flags of a bare `targon sweep`, as oclif gives them. */
const BARE: SweepFlags = {'any-owner': false, 'dry-run': false, guard: false, hooks: true, parallel: MAX_PARALLEL, team: false}

/** What a bare sweep without settings asks for. */
const PLAIN: SweepRequest = {
  defaultTtlMs: null,
  dryRun: false,
  fleet: null,
  hooks: true,
  idleLimitMs: null,
  minRunwayMs: null,
  overCostUsd: null,
  owners: {anyOwner: false, owner: null},
  parallel: MAX_PARALLEL,
  team: false,
  warnWindowMs: null,
}

interface Row {
  name: string
  flags?: Partial<SweepFlags>
  settings?: SweepSettings
  /** What the request differs in from PLAIN. */
  wants?: Partial<SweepRequest>
  /** Or the usage error. */
  error?: {message: string; hint?: string}
}

const ROWS: Row[] = [
  {name: 'nothing set: every fleet, no owner, no limit of its own, no warning', wants: {}},
  {name: 'the owner setting scopes it to that owner', settings: {owner: 'alice'}, wants: {owners: {anyOwner: false, owner: 'alice'}}},
  {
    name: '--any-owner widens the owner set',
    flags: {'any-owner': true},
    settings: {owner: 'alice'},
    wants: {owners: {anyOwner: true, owner: 'alice'}},
  },
  {
    name: "--team sweeps every owner's VMs, whatever the owner setting",
    flags: {team: true},
    settings: {owner: 'alice'},
    wants: {owners: {anyOwner: true, owner: null}, team: true},
  },
  {
    name: '--team --default-ttl bounds the VMs whose limits are unknown',
    flags: {'default-ttl': HOUR, team: true},
    wants: {defaultTtlMs: HOUR, owners: {anyOwner: true, owner: null}, team: true},
  },
  {
    name: '--default-ttl without --team is a usage error',
    flags: {'default-ttl': HOUR},
    error: {hint: 'pass it with --team', message: '--default-ttl bounds the VMs a team guard cannot read'},
  },
  {name: '--fleet sweeps one fleet', flags: {fleet: 'train'}, wants: {fleet: 'train'}},
  {
    name: 'a --fleet that is no fleet name is a usage error',
    flags: {fleet: 'Not A Fleet'},
    error: {hint: 'use 1-12 lowercase letters or digits, e.g. train', message: 'fleet "Not A Fleet" is not valid'},
  },
  {
    name: 'a bad --fleet is told before a --default-ttl without --team',
    flags: {'default-ttl': HOUR, fleet: 'Not A Fleet'},
    error: {message: 'fleet "Not A Fleet" is not valid'},
  },
  {name: '--dry-run', flags: {'dry-run': true}, wants: {dryRun: true}},
  {name: '--no-hooks and --parallel', flags: {hooks: false, parallel: 2}, wants: {hooks: false, parallel: 2}},
  {name: '--over-cost', flags: {'over-cost': 20}, wants: {overCostUsd: 20}},
  {name: 'the idle-limit setting', settings: {idleLimitMs: HOUR}, wants: {idleLimitMs: HOUR}},
  {name: '--idle-limit over the setting', flags: {'idle-limit': 45 * MIN}, settings: {idleLimitMs: HOUR}, wants: {idleLimitMs: 45 * MIN}},
  {name: 'the min-runway setting', settings: {minRunwayMs: 6 * HOUR}, wants: {minRunwayMs: 6 * HOUR}},
  {
    name: '--min-runway over the setting',
    flags: {'min-runway': 48 * HOUR},
    settings: {minRunwayMs: 6 * HOUR},
    wants: {minRunwayMs: 48 * HOUR},
  },
  {name: 'the warn-window setting', settings: {warnWindowMs: 30 * MIN}, wants: {warnWindowMs: 30 * MIN}},
  {name: '--warn over the setting', flags: {warn: 5 * MIN}, settings: {warnWindowMs: 30 * MIN}, wants: {warnWindowMs: 5 * MIN}},
  {
    name: "--guard warns within the guard's window when nothing sets one",
    flags: {guard: true},
    wants: {warnWindowMs: DEFAULT_GUARD_WARN_MS},
  },
  {
    name: '--guard takes the warn-window setting',
    flags: {guard: true},
    settings: {warnWindowMs: 30 * MIN},
    wants: {warnWindowMs: 30 * MIN},
  },
  {name: '--guard takes --warn', flags: {guard: true, warn: 5 * MIN}, wants: {warnWindowMs: 5 * MIN}},
  {
    name: "the guard's scheduled command: its limits from the settings",
    flags: {guard: true},
    settings: {idleLimitMs: HOUR, minRunwayMs: 6 * HOUR, owner: 'alice'},
    wants: {idleLimitMs: HOUR, minRunwayMs: 6 * HOUR, owners: {anyOwner: false, owner: 'alice'}, warnWindowMs: DEFAULT_GUARD_WARN_MS},
  },
  {
    name: "the team guard's scheduled command",
    flags: {'default-ttl': 2 * HOUR, guard: true, team: true},
    settings: {owner: 'alice'},
    wants: {defaultTtlMs: 2 * HOUR, owners: {anyOwner: true, owner: null}, team: true, warnWindowMs: DEFAULT_GUARD_WARN_MS},
  },
]

describe('sweepRequest', () => {
  it.each(ROWS)('$name', ({error, flags, settings, wants}) => {
    const parse = () => sweepRequest({...BARE, ...flags}, settings ?? {})
    if (error) {
      let thrown: unknown
      try {
        parse()
      } catch (caught) {
        thrown = caught
      }

      expect(thrown).toBeInstanceOf(TargonError)
      expect(thrown).toMatchObject({code: 'USAGE', exitCode: 2, ...error})
    } else expect(parse()).toEqual({...PLAIN, ...wants})
  })
})
