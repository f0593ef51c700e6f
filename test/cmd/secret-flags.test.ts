/**
 * A flag's value may be a secret (a webhook URL carries its token): no parse error of any command prints it, in text
 * or in the JSON envelope, whether the flag does not exist there, is mistyped, repeated or given a bad value.
 */
import {describe, expect, it} from 'vitest'

import {tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {useSimulator} from '../helpers/simulator.js'
import {COMMANDS} from '../../src/cli.js'

const SECRET = 'SECRETTOKEN8'
// A run that gets past its flags (sweep only warns of a bad --notify) meets a key the API refuses at once (401),
// rather than a closed port that the client retries for seconds.
const api = useSimulator()
const URL_WITH_SECRET = `https://hooks.example/services/${SECRET}`

/** The command's words and whether it has --notify. */
const commands = Object.entries(COMMANDS).map(([id, command]) => ({
  hasNotify: 'notify' in ((command as {flags?: Record<string, unknown>}).flags ?? {}),
  words: id.split(':'),
}))

function cases(words: string[], hasNotify: boolean): [string, string[]][] {
  return [
    // The unknown-flag path: oclif quotes the whole word (Nonexistent flag: --notify=https://…).
    [
      hasNotify ? 'a mistyped --notify=VALUE' : 'an unknown --notify=VALUE',
      [...words, `--${hasNotify ? 'notfy' : 'notify'}=${URL_WITH_SECRET}`],
    ],
    ['an unknown flag followed by its value', [...words, '--notfy', URL_WITH_SECRET]],
    ['an unknown flag with a value that is no address', [...words, `--webhook-token=${SECRET}`]],
    // The bad-value path: the flag given twice, a value that is not a URL, a value of an option list.
    ...(hasNotify
      ? ([
          ['--notify given twice', [...words, `--notify=${URL_WITH_SECRET}`, `--notify=${URL_WITH_SECRET}`]],
          ['--notify with a value that is not a URL', [...words, '--notify', SECRET]],
          ['--notify with plain http', [...words, '--notify', `http://hooks.example/${SECRET}`]],
        ] as [string, string[]][])
      : []),
    ['a bad value of an option list after --notify', [...words, `--events=${SECRET}`]],
  ]
}

describe('secret flag values in parse errors', () => {
  for (const {hasNotify, words} of commands) {
    it(`targon ${words.join(' ')}: no parse error prints a flag's value`, async () => {
      const env = {TARGON_API_KEY: 'tgn_unused', TARGON_API_URL: api.current.url, TARGON_CONFIG_DIR: tempDir('targon-secret-flags-')}
      for (const [what, argv] of cases(words, hasNotify)) {
        for (const json of [false, true]) {
          const result = await runInProcess(json ? [...argv, '--json'] : argv, {env})
          expect(result.code, `${what}: ${result.stderr}`).not.toBe(0)
          expect(result.stdout + result.stderr, what).not.toContain(SECRET)
          expect(result.stdout + result.stderr, what).not.toContain('hooks.example')
        }
      }
    })
  }

  it('the unknown-flag error still names the flag', async () => {
    const result = await runInProcess(['status', `--notify=${URL_WITH_SECRET}`], {
      env: {TARGON_CONFIG_DIR: tempDir('targon-secret-flags-')},
    })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Nonexistent flag: --notify=…')
  })
})
