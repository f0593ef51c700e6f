/**
 * The in-process runner stands in for the built CLI only if both print the same: the same stdout, stderr and
 * exit code for a success, a usage error, a configuration error and a read from stdin, in both output modes.
 */
import {describe, expect, it} from 'vitest'

import {type CliOptions, type CliResult, runCli, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, useSimulator} from '../helpers/simulator.js'

const sim = useSimulator()

/** The parts of a result that may differ between two runs of the same command. */
function comparable({code, stderr, stdout}: CliResult) {
  const time = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z/g
  return {code, stderr: stderr.replace(time, '<time>'), stdout: stdout.replace(time, '<time>')}
}

const cases: [string, string[], Pick<CliOptions, 'env' | 'input'>][] = [
  ['offers as JSON', ['offers', '--json'], {}],
  ['offers as a table', ['offers', '--gpu', 'h200'], {}],
  ['a bad flag value', ['offers', '--max-price', 'abc'], {}],
  ['an unknown flag under --json', ['offers', '--bogus', '--json'], {}],
  ['a malformed org from the environment', ['status', '--json'], {env: {TARGON_ORG: 'Bad_Org'}}],
  ['no API key', ['status'], {env: {TARGON_API_KEY: undefined}}],
  ['the API key from stdin', ['config', 'set', 'api-key', '--json'], {input: 'tgn_sim_test_key\n'}],
]

describe('in process and in a subprocess', () => {
  for (const [name, args, options] of cases) {
    it(`${name}: targon ${args.join(' ')}`, async () => {
      const configDir = tempDir('targon-config-')
      const env = simulatorEnv(sim.current, {TARGON_CONFIG_DIR: configDir, ...options.env})
      const inProcess = await runInProcess(args, {...options, env})
      const subprocess = await runCli(args, {...options, env})
      expect(comparable(inProcess)).toEqual(comparable(subprocess))
    })
  }
})
