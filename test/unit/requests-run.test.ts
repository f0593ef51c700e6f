/** `targon run`'s request: its words, flags and resolved settings in, the job it asks for or its usage error out. */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {type RunFlags, type RunSettings, parseRunRequest} from '../../src/lib/cli/requests/run.js'
import type {JobRequest} from '../../src/lib/workflows/job/run-request.js'

const DEFAULTS: RunFlags = {detach: false, down: false, 'dry-run': false, hooks: true, 'no-sync': false}
const NO_CAP: RunSettings = {fleet: 'default', maxPrice: null}
const CAPPED: RunSettings = {fleet: 'train', maxPrice: 1.8}

/** A request as oclif hands it over: the whole argv, and its positional words without the -- itself. */
function input(before: string[], after: string[] | null, flags: Partial<RunFlags> = {}) {
  const argv = after === null ? before : [...before, '--', ...after]
  return {argv, flags: {...DEFAULTS, ...flags}, positionals: [...before, ...(after ?? [])]}
}

const ON_GPU1: JobRequest = {
  command: 'python train.py',
  detach: false,
  down: false,
  dryRun: false,
  env: [],
  fleet: 'default',
  hooks: true,
  out: [],
  rent: null,
  sync: true,
  word: 'gpu1',
  workdir: undefined,
}

describe('parseRunRequest', () => {
  const refused: [string, ReturnType<typeof input>, RunSettings, string, string][] = [
    ['no --', input(['gpu1'], null), NO_CAP, 'no command given', "put it after --: targon run VM -- 'python train.py'"],
    [
      'only blanks after --',
      input(['gpu1'], [' ']),
      NO_CAP,
      'no command given',
      "targon run VM -- <command>, e.g. targon run gpu1 -- 'python train.py'",
    ],
    [
      'nothing after --',
      input(['gpu1'], []),
      NO_CAP,
      'no command given',
      "targon run VM -- <command>, e.g. targon run gpu1 -- 'python train.py'",
    ],
    [
      'no VM and no --gpu',
      input([], ['true']),
      CAPPED,
      'no VM named',
      'targon run VM -- COMMAND (targon status lists the VMs), or --gpu MODEL to rent one',
    ],
    [
      'a VM and --gpu',
      input(['gpu1'], ['true'], {gpu: 'h100'}),
      CAPPED,
      'gpu1 and --gpu both say where',
      'name a VM or an offer, or give --gpu alone',
    ],
    ['two VMs', input(['a', 'b'], ['true']), NO_CAP, 'one VM only, got a b', 'the command goes after --'],
    [
      'a NUL in the command',
      input(['gpu1'], ['echo \0']),
      NO_CAP,
      'the command is longer than 64 KiB',
      'put it in a script in the working directory',
    ],
    [
      'a command over 64 KiB',
      input(['gpu1'], ['x'.repeat(64 * 1024 + 1)]),
      NO_CAP,
      'the command is longer than 64 KiB',
      'put it in a script in the working directory',
    ],
    [
      'an absolute --out',
      input(['gpu1'], ['true'], {out: ['/etc/passwd']}),
      NO_CAP,
      '--out "/etc/passwd": an absolute path; --out paths are relative to the job\'s directory',
      "name a path inside the job's directory, e.g. --out results",
    ],
    [
      '--out leaving the directory',
      input(['gpu1'], ['true'], {out: ['a/../../x']}),
      NO_CAP,
      '--out "a/../../x": ".." would leave the job\'s directory',
      "name a path inside the job's directory, e.g. --out results",
    ],
    [
      '--out the directory itself',
      input(['gpu1'], ['true'], {out: ['.']}),
      NO_CAP,
      '--out ".": the job\'s directory itself; name what it holds',
      "name a path inside the job's directory, e.g. --out results",
    ],
    [
      'an empty --out',
      input(['gpu1'], ['true'], {out: ['']}),
      NO_CAP,
      '--out "": an empty path',
      "name a path inside the job's directory, e.g. --out results",
    ],
    [
      '--env with a bad name',
      input(['gpu1'], ['true'], {env: ['1X=2']}),
      NO_CAP,
      '--env "1X": not NAME=VALUE with a shell variable name',
      'e.g. --env EPOCHS=3',
    ],
    [
      '--env without =',
      input(['gpu1'], ['true'], {env: ['NOEQUALS']}),
      NO_CAP,
      '--env "NOEQUALS": not NAME=VALUE with a shell variable name',
      'e.g. --env EPOCHS=3',
    ],
    [
      '--gpu without a price cap',
      input([], ['true'], {gpu: 'h100'}),
      NO_CAP,
      'a price cap is required to rent',
      'pass --max-price <USD per hour>',
    ],
    // The first problem found is the one told: the words before the flags, the flags before the price cap.
    [
      'no command and a bad --out',
      input(['gpu1'], null, {out: ['/x']}),
      NO_CAP,
      'no command given',
      "put it after --: targon run VM -- 'python train.py'",
    ],
    [
      'a bad --out and a bad --env',
      input(['gpu1'], ['true'], {env: ['1X'], out: ['/x']}),
      NO_CAP,
      '--out "/x": an absolute path; --out paths are relative to the job\'s directory',
      "name a path inside the job's directory, e.g. --out results",
    ],
    [
      'a bad --env and no price cap',
      input([], ['true'], {env: ['1X'], gpu: 'h100'}),
      NO_CAP,
      '--env "1X": not NAME=VALUE with a shell variable name',
      'e.g. --env EPOCHS=3',
    ],
  ]
  it.each(refused)('refuses %s (exit 2)', (_case, given, settings, message, hint) => {
    let thrown: unknown
    try {
      parseRunRequest(given, settings)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(TargonError)
    expect(thrown).toMatchObject({code: 'USAGE', exitCode: 2, hint, message})
  })

  const accepted: [string, ReturnType<typeof input>, RunSettings, JobRequest][] = [
    ['a VM and a command', input(['gpu1'], ['python', 'train.py']), NO_CAP, ON_GPU1],
    [
      'the words after -- as one line',
      input(['gpu1'], ['echo', 'hello;', 'echo', 'world']),
      NO_CAP,
      {...ON_GPU1, command: 'echo hello; echo world'},
    ],
    [
      'outputs, environment and a working directory',
      input(['gpu1'], ['python train.py'], {env: ['EPOCHS=3', 'EMPTY=', 'EQ=a=b'], out: ['./results/', 'a//b/./c'], workdir: '../proj'}),
      NO_CAP,
      {
        ...ON_GPU1,
        env: [
          {name: 'EPOCHS', value: '3'},
          {name: 'EMPTY', value: ''},
          {name: 'EQ', value: 'a=b'},
        ],
        out: ['results', 'a/b/c'],
        workdir: '../proj',
      },
    ],
    [
      '--detach --down --no-hooks --no-sync',
      input(['gpu1'], ['python train.py'], {detach: true, down: true, hooks: false, 'no-sync': true}),
      NO_CAP,
      {...ON_GPU1, detach: true, down: true, hooks: false, sync: false},
    ],
    ['--dry-run', input(['gpu1'], ['python train.py'], {'dry-run': true}), NO_CAP, {...ON_GPU1, dryRun: true}],
    [
      'an offer with a price cap: a rent, with its limits',
      input(['rtx6000b-small'], ['python train.py'], {'max-cost': 20, idle: 600_000, ttl: 21_600_000, wait: 1_800_000}),
      CAPPED,
      {
        ...ON_GPU1,
        fleet: 'train',
        rent: {gpu: undefined, idleMs: 600_000, maxCostUsd: 20, maxPrice: 1.8, ttlMs: 21_600_000, waitMs: 1_800_000},
        word: 'rtx6000b-small',
      },
    ],
    [
      '--gpu with a price cap',
      input([], ['python train.py'], {down: true, gpu: 'h100'}),
      CAPPED,
      {
        ...ON_GPU1,
        down: true,
        fleet: 'train',
        rent: {gpu: 'h100', idleMs: undefined, maxCostUsd: undefined, maxPrice: 1.8, ttlMs: undefined, waitMs: undefined},
        word: null,
      },
    ],
    // Whether the word names a VM or an offer is the workflow's to find out; without a cap it can only be a VM.
    [
      'a word without a price cap: no rent',
      input(['rtx6000b-small'], ['true']),
      NO_CAP,
      {...ON_GPU1, command: 'true', word: 'rtx6000b-small'},
    ],
    // A -- among the command's own words belongs to the command.
    ['a second -- in the command', input(['gpu1'], ['git', 'log', '--', 'src']), NO_CAP, {...ON_GPU1, command: 'git log -- src'}],
  ]
  it.each(accepted)('takes %s', (_case, given, settings, request) => {
    expect(parseRunRequest(given, settings)).toStrictEqual(request)
  })
})
