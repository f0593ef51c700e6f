/** targon down's request from its flags: each row is flags (and names) in, the request or the usage error out. */
import {describe, expect, it} from 'vitest'

import {type DownFlags, type DownSettings, downRequest} from '../../src/lib/cli/requests/down.js'
import {TargonError} from '../../src/lib/core/errors.js'
import type {DownRequest} from '../../src/lib/workflows/down-request/request.js'
import {selectionOf} from '../../src/lib/workflows/down/selection.js'

/** The flags as oclif gives them when none is passed. */
const NONE: DownFlags = {
  all: false,
  'any-origin': false,
  'any-owner': false,
  'dry-run': false,
  expired: false,
  force: false,
  hooks: true,
  idle: false,
  'ignore-missing': false,
  'jobs-done': false,
  parallel: 8,
  'wake-registered': false,
  yes: false,
}
const NO_OWNER: DownSettings = {owner: null}

/** The request of a run, with `selection` over one that selects nothing and the rest over the defaults. */
function request(selection: Partial<DownRequest['selection']>, rest: Partial<DownRequest> = {}): DownRequest {
  return {
    dryRun: false,
    force: false,
    hooks: true,
    ignoreMissing: false,
    parallel: 8,
    selection: selectionOf({anyOwner: false, owner: null}, selection),
    wakeRegistered: false,
    yes: false,
    ...rest,
  }
}

describe('down request', () => {
  it.each<[string, Partial<DownFlags>, string[], DownSettings, DownRequest]>([
    ['one VM by name', {}, ['wrk-1'], NO_OWNER, request({targets: ['wrk-1']})],
    [
      'names with the fleet their labels belong to',
      {fleet: 'train'},
      ['worker1'],
      NO_OWNER,
      request({fleet: 'train', targets: ['worker1']}),
    ],
    ['--all --yes', {all: true, yes: true}, [], NO_OWNER, request({all: true}, {yes: true})],
    ['--fleet alone', {fleet: 'train'}, [], NO_OWNER, request({fleet: 'train'})],
    ['--older-than in seconds', {'older-than': 6 * 3_600_000}, [], NO_OWNER, request({older_than_seconds: 21_600})],
    ['--over-cost', {'over-cost': 50}, [], NO_OWNER, request({over_cost_usd: 50})],
    ['--expired', {expired: true}, [], NO_OWNER, request({expired: true})],
    ['--idle with --idle-limit', {idle: true, 'idle-limit': 45 * 60_000}, [], NO_OWNER, request({idle: true, idle_limit_seconds: 2700})],
    ['--jobs-done', {'jobs-done': true}, [], NO_OWNER, request({jobs_done: true})],
    [
      'the owner setting scopes bulk selectors, --any-owner lifts it',
      {all: true, 'any-owner': true, 'any-origin': true},
      [],
      {owner: 'ana'},
      request({all: true, any_origin: true}, {selection: selectionOf({anyOwner: true, owner: 'ana'}, {all: true, any_origin: true})}),
    ],
    [
      'how it deletes: --dry-run, --force, --ignore-missing, --parallel, --wake-registered',
      {'dry-run': true, force: true, 'ignore-missing': true, parallel: 2, 'wake-registered': true},
      ['wrk-1'],
      NO_OWNER,
      request({targets: ['wrk-1']}, {dryRun: true, force: true, ignoreMissing: true, parallel: 2, wakeRegistered: true}),
    ],
    [
      '--hook-timeout in whole seconds, rounded up',
      {'hook-timeout': 90_500},
      ['wrk-1'],
      NO_OWNER,
      request({targets: ['wrk-1']}, {hookTimeoutS: 91}),
    ],
    ['--no-hooks', {hooks: false}, ['wrk-1'], NO_OWNER, request({targets: ['wrk-1']}, {hooks: false})],
  ])('%s', (_, flags, names, settings, expected) => {
    const parsed = downRequest({...NONE, ...flags}, names, settings)
    expect(parsed).toEqual(expected)
    // The JSON's selection keeps its order.
    expect(Object.keys(parsed.selection)).toEqual([
      'all',
      'any_origin',
      'any_owner',
      'owner',
      'expired',
      'fleet',
      'older_than_seconds',
      'over_cost_usd',
      'idle',
      'idle_limit_seconds',
      'jobs_done',
      'targets',
    ])
  })

  const NAMES_WITH_SELECTORS = 'VM names cannot be combined with --all, --expired, --idle, --jobs-done, --older-than or --over-cost'
  it.each<[string, Partial<DownFlags>, string[], string, string]>([
    [
      'nothing selected',
      {},
      [],
      'nothing selected',
      'name VMs, or pass --all, --fleet F, --older-than DUR, --over-cost USD, --expired, --idle or --jobs-done',
    ],
    ['only how to delete, nothing to delete', {yes: true, 'dry-run': true}, [], 'nothing selected', 'name VMs'],
    [
      'a fleet that is no fleet name',
      {fleet: 'Not A Fleet', all: true},
      [],
      'fleet "Not A Fleet" is not valid',
      'use 1-12 lowercase letters or digits',
    ],
    ['--idle-limit without --idle', {'idle-limit': 60_000, all: true}, [], '--idle-limit needs --idle', 'add --idle'],
    [
      '--hook-timeout with --no-hooks',
      {'hook-timeout': 60_000, hooks: false},
      ['wrk-1'],
      '--hook-timeout limits the hooks that --no-hooks skips',
      'drop one of them',
    ],
    [
      '--jobs-done with --idle',
      {'jobs-done': true, idle: true},
      [],
      '--jobs-done and --idle select differently',
      'run them one after the other',
    ],
    ['names with --all', {all: true}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
    ['names with --expired', {expired: true}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
    ['names with --idle', {idle: true}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
    ['names with --jobs-done', {'jobs-done': true}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
    ['names with --older-than', {'older-than': 60_000}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
    ['names with --over-cost', {'over-cost': 5}, ['wrk-1'], NAMES_WITH_SELECTORS, 'name the VMs alone'],
  ])('refuses %s (exit 2)', (_, flags, names, message, hint) => {
    const refusal = (() => {
      try {
        downRequest({...NONE, ...flags}, names, NO_OWNER)
      } catch (error) {
        return error
      }
      return undefined
    })()
    expect(refusal).toBeInstanceOf(TargonError)
    const error = refusal as TargonError
    expect({code: error.code, exit: error.exitCode, message: error.message}).toEqual({code: 'USAGE', exit: 2, message})
    expect(error.hint).toContain(hint)
  })
})
