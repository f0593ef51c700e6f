/** `targon ssh`'s request: its words and flags in, host entries or a VM to reach out, or its usage error. */
import {describe, expect, it} from 'vitest'

import {TargonError} from '../../src/lib/core/errors.js'
import {type SshFlags, parseSshRequest} from '../../src/lib/cli/requests/ssh.js'
import type {SshRequest} from '../../src/lib/workflows/ssh/ssh.js'

const DEFAULTS: SshFlags = {config: false, 'no-command': false, print: false}

describe('parseSshRequest', () => {
  const refused: [string, string[], Partial<SshFlags>, string, string][] = [
    ['no VM', [], {}, 'no VM given', 'targon ssh <name|uid> [-- command], or targon ssh --config'],
    [
      'a bad -L',
      ['gpu1'],
      {'local-forward': ['-oProxyCommand=x']},
      '-L "-oProxyCommand=x" is not a forwarding spec',
      'as OpenSSH takes it, e.g. -L 8888:localhost:8888',
    ],
    [
      'a bad -D',
      ['gpu1'],
      {'dynamic-forward': ['localhost:x']},
      '-D "localhost:x" is not a forwarding spec',
      'as OpenSSH takes it, e.g. -D 1080',
    ],
    [
      '-N with a command',
      ['gpu1', 'uptime'],
      {'no-command': true},
      '-N runs no remote command, but one was given',
      'drop -N or the command',
    ],
    ['--config with a command', ['gpu1', 'uptime'], {config: true}, '--config takes no command', 'drop the words after --'],
  ]
  it.each(refused)('refuses %s (exit 2)', (_case, positionals, flags, message, hint) => {
    let thrown: unknown
    try {
      parseSshRequest(positionals, {...DEFAULTS, ...flags})
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(TargonError)
    expect(thrown).toMatchObject({code: 'USAGE', exitCode: 2, hint, message})
  })

  const accepted: [string, string[], Partial<SshFlags>, SshRequest][] = [
    ['a shell', ['gpu1'], {}, {command: [], fleetFlag: undefined, kind: 'connect', options: [], print: false, target: 'gpu1'}],
    [
      'a command, printed',
      ['gpu1', 'nvidia-smi', '-L'],
      {fleet: 'train', print: true},
      {command: ['nvidia-smi', '-L'], fleetFlag: 'train', kind: 'connect', options: [], print: true, target: 'gpu1'},
    ],
    [
      'forwarding only',
      ['gpu1'],
      {
        'dynamic-forward': ['1080'],
        'local-forward': ['8888:localhost:8888'],
        'no-command': true,
        'remote-forward': ['9000:localhost:9000'],
      },
      {
        command: [],
        fleetFlag: undefined,
        kind: 'connect',
        options: ['-L', '8888:localhost:8888', '-R', '9000:localhost:9000', '-D', '1080', '-N'],
        print: false,
        target: 'gpu1',
      },
    ],
    ['--config for the fleet', [], {config: true, fleet: 'train'}, {fleetFlag: 'train', kind: 'config', target: undefined}],
    ['--config for one VM', ['gpu1'], {config: true}, {fleetFlag: undefined, kind: 'config', target: 'gpu1'}],
  ]
  it.each(accepted)('takes %s', (_case, positionals, flags, request) => {
    expect(parseSshRequest(positionals, {...DEFAULTS, ...flags})).toStrictEqual(request)
  })
})
