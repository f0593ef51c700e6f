import {statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {startSimulator} from '../helpers/simulator.js'
import {DEFAULT_TOKEN, type TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator
beforeAll(async () => {
  sim = await startSimulator()
})
afterAll(async () => {
  await sim.stop()
})

describe('targon config', () => {
  it('stores settings 0600, masks the key, and reads the key only from stdin', async () => {
    const dir = tempDir('targon-config-')
    const env = {TARGON_API_URL: sim.url, TARGON_CONFIG_DIR: dir}
    expect((await runInProcess(['config', 'set', 'max-price', '1.8'], {env})).code).toBe(0)
    expect((await runInProcess(['config', 'set', 'org', 'acme-research'], {env})).code).toBe(0)
    const refused = await runInProcess(['config', 'set', 'api-key', 'tgn_on_the_command_line', '--json'], {env})
    expect(refused.code).toBe(2)
    expect(parseJson(refused).error.message).toContain('never taken from the command line')
    expect((await runInProcess(['config', 'set', 'api-key'], {env, input: `${DEFAULT_TOKEN}\n`})).code).toBe(0)
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)

    const list = await runInProcess(['config', 'list', '--json'], {env})
    expect(list.stdout).not.toContain(DEFAULT_TOKEN)
    expect(parseJson(list).data.values).toMatchObject({
      api_key: `********${DEFAULT_TOKEN.slice(-4)}`,
      max_price: '1.8',
      org: 'acme-research',
    })
    expect((await runInProcess(['config', 'get', 'max-price'], {env})).stdout.trim()).toBe('1.8')

    // The stored key and org are used; the environment wins over the file.
    const status = await runInProcess(['status', '--json'], {env: {...env, TARGON_API_KEY: 'tgn_sim_multi_org_key'}})
    expect(parseJson(status).data.org).toBe('acme-research')
    expect(parseJson(await runInProcess(['status', '--json', '--org', 'acme'], {env})).data.org).toBe('acme')
    expect((await runInProcess(['status', '--json'], {env: {...env, TARGON_API_KEY: 'wrong-key'}})).code).toBe(3)

    expect((await runInProcess(['config', 'unset', 'org'], {env})).code).toBe(0)
    expect(parseJson(await runInProcess(['config', 'get', 'org', '--json'], {env})).data.values).toEqual({org: null})
  })

  it('refuses unknown keys and bad values with exit 2, and a corrupt file with exit 3 naming it', async () => {
    const dir = tempDir('targon-config-')
    const env = {TARGON_API_URL: sim.url, TARGON_CONFIG_DIR: dir}
    expect((await runInProcess(['config', 'set', 'colour', 'blue'], {env})).code).toBe(2)
    expect((await runInProcess(['config', 'set', 'max-price', 'cheap'], {env})).code).toBe(2)
    expect((await runInProcess(['config', 'set', 'fleet', 'Not_Valid'], {env})).code).toBe(2)
    writeFileSync(join(dir, 'config.json'), '{not json', {mode: 0o600})
    const corrupt = await runInProcess(['status'], {env})
    expect(corrupt.code).toBe(3)
    expect(corrupt.stderr).toContain(join(dir, 'config.json'))
  })
})
