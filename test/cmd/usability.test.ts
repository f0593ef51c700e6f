/** Small things a new user meets: -h, one-line parse errors, the source of a rejected key, and status wording. */
import {afterEach, describe, expect, it} from 'vitest'

import {VERSION} from '../../src/lib/core/version.js'
import {parseJson, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator | undefined

afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

describe('usability', () => {
  it('-h shows the help, as --help does', async () => {
    const result = await runInProcess(['offers', '-h'])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('USAGE')
  })

  it('targon version prints the version, as --version does, and as JSON with --json', async () => {
    const text = await runInProcess(['version'])
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toBe(`targon-fleet ${VERSION} (node ${process.versions.node}, ${process.platform}-${process.arch})\n`)
    const json = parseJson(await runInProcess(['version', '--json']))
    expect(json).toMatchObject({command: 'version', data: {node: process.versions.node, version: VERSION}, ok: true})
  })

  it('a parse error is one line without ":;"', async () => {
    const result = await runInProcess(['logs'])
    expect(result.code).toBe(2)
    expect(result.stderr).toBe(
      'Error: Missing 1 required arg: vm VM name, uid or --name label. Hint: see --help for the flags and examples\n',
    )
  })

  it('a rejected key is blamed on where it came from: the config file, or TARGON_API_KEY', async () => {
    sim = await startSimulator()
    const configDir = tempDir('targon-config-')
    const env = simulatorEnv(sim, {TARGON_API_KEY: undefined, TARGON_CONFIG_DIR: configDir})
    expect((await runInProcess(['config', 'set', 'api-key'], {env, input: 'tgn_wrong_key\n'})).code).toBe(0)
    const fromFile = parseJson(await runInProcess(['status', '--json'], {env}))
    expect(fromFile.error).toMatchObject({
      code: 'AUTH',
      hint: `check the api-key in ${configDir}/config.json and that the key belongs to this org`,
    })
    const fromEnv = parseJson(await runInProcess(['status', '--json'], {env: {...env, TARGON_API_KEY: 'tgn_other_wrong'}}))
    expect(fromEnv.error.hint).toBe('check TARGON_API_KEY and that the key belongs to this org')
  })

  it('status says "deleted" once for a deleted record', async () => {
    // Never bouncing to an error tombstone: on a busy machine the listing could come after the bounce.
    sim = await startSimulator({tombstoneBounceMs: null})
    sim.addWorkload({deletedAt: Date.now(), name: 'tcli-default-gone', status: 'deleted'})
    const result = await runInProcess(['status', '--show-deleted'], {
      env: simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir('targon-config-')}),
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout, result.stderr).toMatch(/\tdeleted\tno\t/)
    expect(result.stdout).not.toContain('deleted (deleted)')
  })

  it('refuses bad input with exit 2 and the usage envelope, before anything is created', async () => {
    sim = await startSimulator()
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir('targon-usage-')})
    for (const args of [
      ['up', 'rtx6000b-small'],
      ['up', '--max-price', '2'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--count', '2', '--name', 'x'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--fleet', 'Bad_Fleet'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--timeout', '5'],
      ['down'],
      ['down', '--older-than', 'soon'],
      ['down', '--over-cost', 'lots'],
      ['down', '--all', '--events', 'xml'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--on-delete', 'save\nrm -rf ~'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--on-delete', 'x'.repeat(4097)],
      ['up', 'rtx6000b-small', '--max-price', '2', '--hook-timeout', '5m'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--on-delete', 'true', '--hook-timeout', '10'],
      ['up', 'rtx6000b-small', '--max-price', '2', '--on-delete', 'true', '--no-bootstrap'],
    ]) {
      const result = await runInProcess([...args, '--json'], {env})
      expect(result.code, args.join(' ')).toBe(2)
      expect(parseJson(result).error.code).toBe('USAGE')
      expect(parseJson(result).error.message, args.join(' ')).not.toContain('\n')
    }

    expect(sim.requests('POST', '/workloads')).toHaveLength(0)
  })

  it('--events ndjson refuses --verbose (stderr would carry more than events) and names --events-file', async () => {
    sim = await startSimulator()
    const result = await runInProcess(['down', '--all', '--events', 'ndjson', '--verbose'], {
      env: simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir('targon-usage-')}),
    })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--events-file')
    expect(sim.requests('GET', '/workloads')).toHaveLength(0)
  })
})
