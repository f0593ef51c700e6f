/**
 * up's request parser, row by row: the flags (with oclif's defaults) and the resolved settings in, the request that
 * runUp and planUp are asked, or the usage error, out.
 */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {type UpCommandRequest, type UpFlags, checkPriceCap, checkUpFlags, parseUpRequest} from '../../src/lib/cli/requests/up.js'
import type {UpSettingValues} from '../../src/lib/workflows/up/settings.js'

/** The flags of `targon up` as oclif gives them with nothing typed but the resource. */
const DEFAULTS: UpFlags = {
  bootstrap: true,
  count: 1,
  'dry-run': false,
  dstack: false,
  'force-shim': false,
  'gpu-test': true,
  'on-failure': 'auto',
  reinstall: false,
  resource: 'rtx6000b-small',
  shim: true,
}

/** The settings as readUpSettings resolves them for those flags, with a cap of 1.8 USD/h. */
const SETTINGS: UpSettingValues = {
  bootstrap: {
    dstackVersion: '0.19.1',
    idleSampleIntervalMs: 60_000,
    pullRetryDelayMs: 5000,
    shimHealthTimeoutMs: 60_000,
    stateWatchIntervalMs: 5000,
  },
  capacityPollIntervalMs: 15_000,
  fleet: 'default',
  image: 'ubuntu-24.04',
  maxPrice: 1.8,
  owner: null,
}

const BOOTSTRAP = {
  dstackVersion: '0.19.1',
  forceShim: false,
  gpuTest: true,
  idle: {check: undefined, containers: undefined, intervalMs: 60_000, limitMs: undefined},
  onDelete: undefined,
  pullRetryDelayMs: 5000,
  reinstall: false,
  shim: true,
  shimHealthTimeoutMs: 60_000,
  stateWatchIntervalMs: 5000,
}

/** `targon up rtx6000b-small --max-price 1.8`, as asked. */
const ASK: UpCommandRequest['ask'] = {
  bootstrap: BOOTSTRAP,
  capacity: null,
  count: 1,
  fleet: 'default',
  gpu: undefined,
  image: 'ubuntu-24.04',
  label: undefined,
  maxCostUsd: undefined,
  maxPrice: 1.8,
  min: undefined,
  minGpus: undefined,
  onFailure: 'auto',
  owner: null,
  resource: 'rtx6000b-small',
  timeoutMs: 60 * 60_000,
  ttlMs: undefined,
}

function parse(flags: Partial<UpFlags>, settings: Partial<UpSettingValues> = {}): UpCommandRequest {
  return parseUpRequest({...DEFAULTS, ...flags}, {...SETTINGS, ...settings})
}

describe('up: the usage errors', () => {
  const rows: [string, Partial<UpFlags>, string, string][] = [
    [
      'no resource, --gpu or --name',
      {resource: undefined},
      'no resource given',
      'name a resource (targon up rtx6000b-small ...) or a GPU model (--gpu h200)',
    ],
    ['a resource and --gpu', {gpu: 'h200'}, 'give either a resource or --gpu, not both', 'drop one of them'],
    ['--min-gpus without --gpu', {'min-gpus': 8}, '--min-gpus needs --gpu', 'add --gpu <model>'],
    ['--name with --count 2', {count: 2, name: 'w1'}, '--name works with --count 1 only', 'drop --name to get generated names'],
    ...(['idle', 'idle-check', 'idle-containers'] as const).map((flag): [string, Partial<UpFlags>, string, string] => [
      `--${flag} with --no-bootstrap`,
      {bootstrap: false, [flag]: flag === 'idle' ? 60_000 : flag === 'idle-check' ? 'true' : false},
      '--idle, --idle-check and --idle-containers need the bootstrap, which installs the idle sampler',
      'drop --no-bootstrap',
    ]),
    [
      '--hook-timeout without --on-delete',
      {'hook-timeout': 60_000},
      '--hook-timeout needs --on-delete',
      'add --on-delete CMD, the hook it limits',
    ],
    [
      '--on-delete of two lines',
      {'on-delete': 'save\nrm -rf /'},
      '--on-delete contains a control character (a newline, a tab, …)',
      'give one line of at most 4 KiB, e.g. a script on the VM: --on-delete "~/save.sh"',
    ],
    [
      '--on-delete longer than 4 KiB',
      {'on-delete': 'x'.repeat(4097)},
      '--on-delete is longer than 4 KiB',
      'give one line of at most 4 KiB, e.g. a script on the VM: --on-delete "~/save.sh"',
    ],
    [
      '--on-delete with --no-bootstrap',
      {bootstrap: false, 'on-delete': '~/save.sh'},
      '--on-delete needs the bootstrap, which prepares the VM for it',
      'drop --no-bootstrap',
    ],
    [
      '--force-shim with --no-bootstrap',
      {bootstrap: false, 'force-shim': true},
      '--force-shim needs the shim-start phase',
      'drop --no-bootstrap and --no-shim',
    ],
    [
      '--force-shim with --no-shim',
      {'force-shim': true, shim: false},
      '--force-shim needs the shim-start phase',
      'drop --no-bootstrap and --no-shim',
    ],
    ['--min above --count', {count: 2, min: 3}, '--min 3 is more than --count 2', 'lower --min or raise --count'],
  ]

  it.each(rows)('%s', (_, flags, message, hint) => {
    const error = thrown(() => parse(flags))
    expect(error).toMatchObject({code: 'USAGE', exitCode: 2, hint, message})
    // The same error before any setting is read.
    expect(thrown(() => checkUpFlags({...DEFAULTS, ...flags}))).toMatchObject({hint, message})
  })

  it.each([
    ['a resource', {}],
    ['--gpu', {gpu: 'h200', resource: undefined}],
    ['a resource with --name', {name: 'w1'}],
  ])('%s without a price cap', (_, flags: Partial<UpFlags>) => {
    const hint = 'pass --max-price <USD per hour>, e.g. --max-price 1.8'
    expect(thrown(() => parse(flags, {maxPrice: null}))).toMatchObject({
      code: 'USAGE',
      exitCode: 2,
      hint,
      message: 'a price cap is required',
    })
    expect(thrown(() => checkPriceCap({...DEFAULTS, ...flags}, null))).toMatchObject({message: 'a price cap is required'})
  })

  it('reports the first error of the flags: a flag error before the missing cap', () => {
    expect(thrown(() => parse({count: 2, min: 3}, {maxPrice: null})).message).toBe('--min 3 is more than --count 2')
  })
})

describe('up: the requests', () => {
  const rows: [string, Partial<UpFlags>, Partial<UpSettingValues>, Partial<UpCommandRequest>][] = [
    ['a resource under a cap', {}, {}, {ask: ASK, dryRun: false, dstack: false, notifyUrl: undefined}],
    ['--count 4 --min 2', {count: 4, min: 2}, {}, {ask: {...ASK, count: 4, min: 2}}],
    [
      '--gpu h200 --min-gpus 8',
      {gpu: 'h200', 'min-gpus': 8, resource: undefined},
      {},
      {ask: {...ASK, gpu: 'h200', minGpus: 8, resource: undefined}},
    ],
    ['--name with a resource', {name: 'worker1'}, {}, {ask: {...ASK, label: 'worker1'}}],
    [
      '--name alone, without a cap: it only adopts',
      {name: 'worker1', resource: undefined},
      {maxPrice: null},
      {ask: {...ASK, label: 'worker1', maxPrice: null, resource: undefined}},
    ],
    ['--wait 2h', {wait: 7_200_000}, {}, {ask: {...ASK, capacity: {pollFloorMs: 15_000, waitMs: 7_200_000}}}],
    [
      '--wait with a poll interval set',
      {wait: 60_000},
      {capacityPollIntervalMs: 100},
      {ask: {...ASK, capacity: {pollFloorMs: 100, waitMs: 60_000}}},
    ],
    ['--on-failure keep', {'on-failure': 'keep'}, {}, {ask: {...ASK, onFailure: 'keep'}}],
    ['--no-bootstrap', {bootstrap: false}, {bootstrap: undefined}, {ask: {...ASK, bootstrap: null}}],
    ['--no-shim', {shim: false}, {}, {ask: {...ASK, bootstrap: {...BOOTSTRAP, shim: false}}}],
    [
      '--reinstall --force-shim --no-gpu-test',
      {'force-shim': true, 'gpu-test': false, reinstall: true},
      {},
      {ask: {...ASK, bootstrap: {...BOOTSTRAP, forceShim: true, gpuTest: false, reinstall: true}}},
    ],
    [
      '--idle 30m --idle-check ... --idle-containers',
      {idle: 1_800_000, 'idle-check': 'test -z "$(queue)"', 'idle-containers': true},
      {},
      {
        ask: {
          ...ASK,
          bootstrap: {...BOOTSTRAP, idle: {check: 'test -z "$(queue)"', containers: true, intervalMs: 60_000, limitMs: 1_800_000}},
        },
      },
    ],
    [
      '--on-delete CMD: the default hook timeout, in whole seconds',
      {'on-delete': '~/save.sh'},
      {},
      {ask: {...ASK, bootstrap: {...BOOTSTRAP, onDelete: {command: '~/save.sh', timeout_s: 600}}}},
    ],
    [
      '--on-delete CMD --hook-timeout 90.5s',
      {'hook-timeout': 90_500, 'on-delete': '~/save.sh'},
      {},
      {ask: {...ASK, bootstrap: {...BOOTSTRAP, onDelete: {command: '~/save.sh', timeout_s: 91}}}},
    ],
    ["--on-delete '' removes the hook", {'on-delete': ''}, {}, {ask: {...ASK, bootstrap: {...BOOTSTRAP, onDelete: null}}}],
    ['--ttl 6h', {ttl: 21_600_000}, {}, {ask: {...ASK, ttlMs: 21_600_000}}],
    ['--max-cost 20', {'max-cost': 20}, {}, {ask: {...ASK, maxCostUsd: 20}}],
    ['--timeout 30m', {timeout: 1_800_000}, {}, {ask: {...ASK, timeoutMs: 1_800_000}}],
    ['--dstack', {dstack: true}, {}, {ask: ASK, dstack: true}],
    ['--dry-run', {'dry-run': true}, {}, {ask: ASK, dryRun: true}],
    ['--notify URL', {notify: 'https://hooks.example/x'}, {}, {notifyUrl: 'https://hooks.example/x'}],
    [
      'the fleet, image, owner and dstack version of the settings',
      {},
      {
        bootstrap: {...(SETTINGS.bootstrap as NonNullable<UpSettingValues['bootstrap']>), dstackVersion: 'latest'},
        fleet: 'train',
        image: 'img',
        owner: 'ana',
      },
      {ask: {...ASK, bootstrap: {...BOOTSTRAP, dstackVersion: 'latest'}, fleet: 'train', image: 'img', owner: 'ana'}},
    ],
  ]

  it.each(rows)('%s', (_, flags, settings, expected) => {
    expect(parse(flags, settings)).toMatchObject(expected)
    expect(parse(flags, settings).ask).toStrictEqual(expected.ask ?? ASK)
  })

  it('refuses to build a request from settings that were not read for its flags', () => {
    expect(() => parse({}, {bootstrap: undefined})).toThrow('the settings of the bootstrap were not read')
    expect(() => parse({wait: 60_000}, {capacityPollIntervalMs: undefined})).toThrow('the settings of --wait were not read')
  })
})

function thrown(run: () => unknown): TargonError {
  try {
    run()
  } catch (error) {
    expect(error).toBeInstanceOf(TargonError)
    return error as TargonError
  }

  throw new Error('expected a usage error')
}
