/**
 * Malformed settings and input, from what a new user runs into: out-of-range timeouts in the environment, an
 * API URL copied with its path, bad or unknown orgs, a hand-edited config file, API keys with stray
 * characters, durations without units. Each test runs the commands in process against the simulator and
 * checks the exit code, the JSON envelope and that nothing was created.
 */
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const setup = ctx.setup

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

describe('settings from the environment', () => {
  it('refuses out-of-range timeouts with exit 3 naming the variable and the range, without a Node warning', async () => {
    await setup()
    for (const value of ['3000000', '1e9', '0', 'soon', '-5']) {
      const result = await targon(['offers', '--json'], {env: {TARGON_HTTP_TIMEOUT: value}})
      expect(result.code, value).toBe(3)
      expect(parseJson(result).error).toMatchObject({
        code: 'CONFIG',
        message: `TARGON_HTTP_TIMEOUT "${value}" is not a number of seconds from 1 to 3600`,
      })
      expect(result.stderr).toBe('')
    }

    const up = await targon([...UP.filter((arg) => arg !== '--no-bootstrap'), '--json'], {env: {TARGON_SHIM_HEALTH_TIMEOUT: '1e9'}})
    expect(up.code).toBe(3)
    expect(parseJson(up).error.message).toContain('TARGON_SHIM_HEALTH_TIMEOUT')
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(0)
    expect((await targon(['offers', '--json'], {env: {TARGON_HTTP_TIMEOUT: '2.5'}})).code).toBe(0)
    const exec = await targon(['exec', '--json', '--', 'true'], {env: {TARGON_SSH_CONNECT_TIMEOUT: '0'}})
    expect(exec.code).toBe(3)
    expect(parseJson(exec).error.message).toBe('TARGON_SSH_CONNECT_TIMEOUT "0" is not a number of seconds from 1 to 3600')
  })
})

describe('TARGON_API_URL', () => {
  it('takes a URL copied with /tha/v3 (with or without a slash) as the origin, and blames the URL for a missing route', async () => {
    await setup()
    for (const suffix of ['/tha/v3', '/tha/v3/']) {
      const result = await targon(['status', '--json'], {env: {TARGON_API_URL: ctx.sim.url + suffix}})
      expect(result.code, result.stdout).toBe(0)
    }

    expect(ctx.sim.log.filter((entry) => entry.path.includes('/tha/v3/tha/v3'))).toEqual([])
    const wrong = await targon(['status', '--json'], {env: {TARGON_API_URL: `${ctx.sim.url}/proxy`}})
    expect(wrong.code).toBe(4)
    const {hint} = parseJson(wrong).error
    expect(hint).toContain('TARGON_API_URL')
    expect(hint).not.toContain('name')
  })
})

describe('org', () => {
  it('a malformed org from the environment or config file, or an unknown or inaccessible one, is CONFIG (exit 3)', async () => {
    await setup()
    const cases: [string[], Record<string, string>][] = [
      [['status', '--json'], {TARGON_ORG: 'Bad_Org'}],
      [['status', '--json'], {TARGON_ORG: 'nosuchorg'}],
      [[...UP, '--json'], {TARGON_ORG: 'nosuchorg'}],
    ]
    for (const [args, extra] of cases) {
      const result = await targon(args, {env: extra})
      expect(result.code, `${args.join(' ')} ${JSON.stringify(extra)}`).toBe(3)
      expect(parseJson(result).error.code).toBe('CONFIG')
    }

    // An org that exists but is not this key's: GET /orgs/{slug} answers 403, an AUTH error (exit 3).
    const foreign = parseJson(await targon(['status', '--json', '--org', 'acme-research']))
    expect(foreign.error).toMatchObject({code: 'AUTH', exit_code: 3, message: 'this API key may not use org "acme-research"'})
    expect(ctx.sim.requests('GET', /\/tha\/v3\/orgs\/acme-research$/).length).toBeGreaterThan(0)

    expect(parseJson(await targon(['status', '--json'], {env: {TARGON_ORG: 'nosuchorg'}})).error.hint).toContain('acme')
    // A malformed --org is a bad flag value: a usage error.
    expect(parseJson(await targon(['status', '--json', '--org', 'Bad_Org'])).error).toMatchObject({code: 'USAGE', exit_code: 2})
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(0)
    expect((await targon(['status', '--json'], {env: {TARGON_ORG: 'acme'}})).code).toBe(0)
  })

  it('an org-scoped service token that belongs to no org works with an explicit org, which is checked by asking for it', async () => {
    await setup()
    const service = {TARGON_API_KEY: 'tgn_sim_service_key'}
    expect((await targon(['status', '--json'], {env: {...service, TARGON_ORG: 'acme'}})).code).toBe(0)
    expect(ctx.sim.requests('GET', /\/tha\/v3\/orgs\/acme$/).length).toBeGreaterThan(0)
    // Without an org it cannot discover one: the listing is empty.
    expect(parseJson(await targon(['status', '--json'], {env: service})).error.code).toBe('AUTH')
  })
})

describe('config file', () => {
  function writeConfig(values: Record<string, unknown>) {
    mkdirSync(ctx.configDir, {mode: 0o700, recursive: true})
    writeFileSync(join(ctx.configDir, 'config.json'), JSON.stringify(values), {mode: 0o600})
  }

  it('refuses a hand-edited value of the wrong type or shape with exit 3 naming the key, and takes a numeric max-price', async () => {
    await setup()
    const bad: [Record<string, unknown>, string[], string][] = [
      [{'api-key': 12_345}, ['config', 'list', '--json'], 'api-key must be a string'],
      [{'api-key': 12_345}, ['status', '--json'], 'api-key must be a string'],
      [{fleet: ['a']}, ['status', '--json'], 'fleet must be a string'],
      [{fleet: 'Not_Valid'}, ['status', '--json'], 'fleet: fleet is not valid'],
      [{'max-price': 'cheap'}, ['up', 'rtx6000b-small', '--no-bootstrap', '--json'], 'max-price: max-price is not a price'],
      [{'max-price': true}, ['config', 'get', 'max-price', '--json'], 'max-price must be a string'],
      [{org: 'Bad Org'}, ['status', '--json'], 'org: org is not a valid slug'],
    ]
    for (const [values, args, message] of bad) {
      writeConfig(values)
      const result = await targon(args, {env: values['api-key'] === undefined ? {} : {TARGON_API_KEY: ''}})
      expect(result.code, `${JSON.stringify(values)} ${args.join(' ')}: ${result.stdout}`).toBe(3)
      expect(parseJson(result).error).toMatchObject({code: 'CONFIG'})
      expect(parseJson(result).error.message).toContain(message)
    }

    // `config set` and `config unset` still work on such a file, to repair it.
    writeConfig({'api-key': 12_345, fleet: ['a']})
    expect((await targon(['config', 'unset', 'fleet'])).code).toBe(0)
    expect((await targon(['config', 'set', 'api-key'], {input: 'tgn_sim_test_key\n'})).code).toBe(0)
    expect(parseJson(await targon(['config', 'list', '--json'])).data.values).toMatchObject({api_key: '********_key', fleet: null})

    writeConfig({'max-price': 1.8})
    const up = await targon(['up', 'rtx6000b-small', '--no-bootstrap', '--json'])
    expect(up.code, up.stdout).toBe(0)
    expect(parseJson(up).data.vms[0].max_price).toBe(1.8)
    expect(parseJson(await targon(['config', 'get', 'max-price', '--json'])).data.values).toEqual({max_price: '1.8'})
    writeConfig({'max-price': 1})
    expect((await targon(['up', 'rtx6000b-small', '--no-bootstrap', '--json'])).code).toBe(9)
    expect(ctx.sim.live()).toHaveLength(1)
  })

  it('refuses an API key with control or non-ASCII characters at config set (exit 2) and at use (exit 3)', async () => {
    await setup()
    for (const key of ['tgn_sim_tést_key', 'tgn_sim\u0007_test_key', 'tgn_sim test_key']) {
      const set = await targon(['config', 'set', 'api-key', '--json'], {input: `${key}\n`})
      expect(set.code, key).toBe(2)
      expect(parseJson(set).error.message).toContain('API key looks wrong')

      const fromEnv = await targon(['status', '--json'], {env: {TARGON_API_KEY: key}})
      expect(fromEnv.code, key).toBe(3)
      expect(parseJson(fromEnv).error).toMatchObject({code: 'CONFIG'})
      expect(fromEnv.stdout).not.toContain(key)

      writeConfig({'api-key': key})
      const fromFile = await targon(['status', '--json'], {env: {TARGON_API_KEY: ''}})
      expect(fromFile.code, key).toBe(3)
      expect(parseJson(fromFile).error.message).toContain('api-key')
      expect(fromFile.stdout).not.toContain(key)
    }
  })
})

describe('durations', () => {
  it("need a unit and stay within each flag's stated range, before anything is created", async () => {
    await setup()
    const cases: [string[], string][] = [
      [[...UP, '--ttl', '90'], '--ttl "90" has no unit'],
      [[...UP, '--ttl', '0'], '--ttl "0" has no unit'],
      [[...UP, '--ttl', '10ms'], '--ttl "10ms" is not a duration'],
      [[...UP, '--ttl', '30s'], 'from 1m to 365d'],
      [[...UP, '--timeout', '1000d'], 'from 1s to 365d'],
      [['down', '--older-than', '30s'], 'from 1m to 365d'],
    ]
    for (const [args, message] of cases) {
      const result = await targon([...args, '--json'])
      expect(result.code, args.join(' ')).toBe(2)
      const {error} = parseJson(result)
      expect(`${error.message}. ${error.hint}`).toContain(message)
    }

    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(0)
  })
})
