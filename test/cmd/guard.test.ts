/**
 * targon guard install against the simulator, with a crontab command of the test's own first on PATH (a file in a
 * temporary directory): the real crontab is never touched, and no root is needed. The entry it writes is run as
 * cron runs it, with no environment. The real crontab and systemd units are exercised in test/e2e/guard.test.ts.
 */
import {spawn} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {parseJson, tempDir, writeConfigFile} from '../helpers/cli.js'
import {fakeCrontab} from '../helpers/crontab.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const ctx = useFreshFixture({env: {TARGON_API_KEY: undefined}})
const {setup, targon} = ctx

/** Runs a crontab entry's command as cron does: through sh, with no environment at all. */
function runAsCron(line: string): Promise<number | null> {
  const command = line.split(' ').slice(5).join(' ')
  return new Promise((resolve) => spawn('sh', ['-c', command], {env: {}, stdio: 'ignore'}).on('close', resolve))
}

describe('guard install and the API URL', () => {
  it('refuses (exit 3) an API URL that only the environment gives; stored with config set, the entry reaches it', async () => {
    await setup()
    const crontab = fakeCrontab()
    const env = {PATH: crontab.path}
    expect((await targon(['config', 'set', 'api-key'], {input: `${DEFAULT_TOKEN}\n`})).code).toBe(0)

    const refused = await targon(['guard', 'install', '--cron', '--json'], {env})
    expect(refused.code, refused.stdout + refused.stderr).toBe(3)
    expect(parseJson(refused).error).toMatchObject({
      code: 'CONFIG',
      hint: `store it for the guard: targon config set api-url ${ctx.sim.url}`,
      message: `TARGON_API_URL gives the API URL ${ctx.sim.url}, which the guard would not have (it would use https://api.targon.com)`,
    })
    expect(existsSync(crontab.file)).toBe(false)

    expect((await targon(['config', 'set', 'api-url', ctx.sim.url])).code).toBe(0)
    const installed = await targon(['guard', 'install', '--cron', '--json'], {env})
    expect(installed.code, installed.stdout + installed.stderr).toBe(0)
    const entry = readFileSync(crontab.file, 'utf8').trim().split('\n')[1] as string
    expect(entry).toContain(`TARGON_CONFIG_DIR=${ctx.configDir} `)
    const before = ctx.sim.log.length
    expect(await runAsCron(entry)).toBe(0)
    expect(JSON.parse(readFileSync(join(ctx.configDir, 'guard', 'default.log'), 'utf8'))).toMatchObject({command: 'sweep', ok: true})
    expect(ctx.sim.log.length).toBeGreaterThan(before)

    // Another URL in the environment than the stored one is refused too; the same one, with a trailing slash, is not.
    const other = await targon(['guard', 'install', '--cron', '--json'], {env: {...env, TARGON_API_URL: 'https://api.example.com'}})
    expect(other.code).toBe(3)
    expect(parseJson(other).error.hint).toBe('store it for the guard: targon config set api-url https://api.example.com')
    expect((await targon(['guard', 'install', '--cron', '--json'], {env: {...env, TARGON_API_URL: `${ctx.sim.url}/`}})).code).toBe(0)
  })

  it('refuses to store a plain-http API URL to another host (exit 2), as the environment gives it (exit 3)', async () => {
    await setup()
    const set = await targon(['config', 'set', 'api-url', 'http://evil.example', '--json'])
    expect(set.code).toBe(2)
    expect(parseJson(set).error.message).toContain('uses plain http to another host, which would send the API key in clear text')
    expect(existsSync(join(ctx.configDir, 'config.json'))).toBe(false)
    const env = await targon(['status', '--json'], {env: {TARGON_API_KEY: DEFAULT_TOKEN, TARGON_API_URL: 'http://evil.example'}})
    expect(env.code).toBe(3)
    expect(parseJson(env).error.message).toContain('uses plain http to another host')
  })

  it('takes the API URL from the config file when the environment gives none, for every command', async () => {
    await setup()
    expect((await targon(['config', 'set', 'api-url', `${ctx.sim.url}/tha/v3`])).code).toBe(0)
    expect((await targon(['config', 'get', 'api-url', '--json'])).json.data.values).toEqual({api_url: ctx.sim.url})
    const status = await targon(['status', '--json'], {env: {TARGON_API_KEY: DEFAULT_TOKEN, TARGON_API_URL: undefined}})
    expect(status.code, status.stdout + status.stderr).toBe(0)
    // A profile named for the run decides its endpoint over the environment, as it does its key: its key goes there only.
    expect((await targon(['config', 'set', 'api-key', '--profile', 'sim'], {input: `${DEFAULT_TOKEN}\n`})).code).toBe(0)
    expect((await targon(['config', 'set', 'api-url', ctx.sim.url, '--profile', 'sim'])).code).toBe(0)
    const named = await targon(['status', '--profile', 'sim', '--json'], {env: {TARGON_API_URL: 'https://api.example.invalid'}})
    expect(named.code, named.stdout + named.stderr).toBe(0)
  })
})

describe('the folders above the config directory', () => {
  it('refuses (exit 3, with the fix) a config directory inside a folder others can write; sticky, it is taken', async () => {
    await setup()
    const folder = join(tempDir('targon-open-'), 'shared')
    mkdirSync(folder)
    chmodSync(folder, 0o777)
    const config = join(folder, 'config')
    const refused = await targon(['config', 'set', 'fleet', 'train', '--json'], {config})
    expect(refused.code, refused.stdout + refused.stderr).toBe(3)
    expect(parseJson(refused).error).toMatchObject({
      code: 'CONFIG',
      hint: `run: chmod go-w ${folder} (or chmod +t ${folder}, as /tmp is), or set TARGON_CONFIG_DIR to a directory elsewhere`,
      message: `config directory ${config} is inside ${folder}, which is writable by other users (mode 777)`,
    })
    expect(existsSync(config)).toBe(false)
    // Made first (by this user, or by another before the folder was opened): refused all the same.
    mkdirSync(config, {mode: 0o700})
    expect((await targon(['status', '--json'], {config, env: {TARGON_API_KEY: DEFAULT_TOKEN}})).code).toBe(3)
    chmodSync(folder, 0o1777)
    expect((await targon(['config', 'set', 'fleet', 'train'], {config})).code).toBe(0)
  })
})

describe("the team guard's key and up", () => {
  const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']
  const withKey = {env: {TARGON_API_KEY: DEFAULT_TOKEN}}
  const guardDir = () => {
    const dir = tempDir('targon-team-')
    writeConfigFile(dir, {'api-key': DEFAULT_TOKEN, 'api-url': ctx.sim.url})
    return dir
  }

  it("lists the org's keys once per run and adds every team guard's key to each VM it creates", async () => {
    await setup()
    const printed = await targon(['guard', 'print', '--team', '--cron', '--json'], {config: guardDir()})
    expect(printed.code, printed.stdout + printed.stderr).toBe(0)
    const key = parseJson(printed).data.guard_key
    expect(parseJson(printed).data.text).toContain(' sweep --profile default --guard --team --json ')
    // A key named as a team guard's but not an ed25519 public key is not one: it never goes on a VM.
    ctx.sim.sshKeys.set('shk-bogus', {
      created_at: '',
      name: 'targon-guard-00000000',
      org: 'acme',
      public_key_raw: 'not a key',
      uid: 'shk-bogus',
    })

    const listings = ctx.sim.requests('GET', /\/ssh-keys$/).length
    const up = await targon([...UP, '--count', '2'], withKey)
    expect(up.code, up.stdout + up.stderr).toBe(0)
    expect(parseJson(up).data.guard_keys).toEqual([key])
    expect(parseJson(up).warnings.join('\n')).not.toContain('no guard covers')
    for (const vm of parseJson(up).data.vms) expect(ctx.sim.current(vm.uid)?.ssh_keys).toEqual([expect.any(String), key.uid])
    // One listing to register the project key (the first run of this directory), one for the team guards' keys.
    expect(ctx.sim.requests('GET', /\/ssh-keys$/).length - listings).toBe(2)
  })

  it("goes on without the team guards' keys when the org's keys cannot be listed, and says what that leaves", async () => {
    await setup()
    expect((await targon(UP, withKey)).code).toBe(0)
    ctx.sim.inject({method: 'GET', path: /\/ssh-keys$/, status: 500})
    const up = await targon(UP, withKey)
    expect(up.code, up.stdout + up.stderr).toBe(0)
    expect(parseJson(up).data.guard_keys).toEqual([])
    const warnings = parseJson(up).warnings.join('\n')
    expect(warnings).toMatch(/the org's SSH keys could not be listed \(.*\): the VMs this run makes carry no team guard's key/)
    expect(warnings).toContain('no guard covers the VMs this run made: run targon guard install --team on an always-on machine')
  })

  it('guard status works without an API key, leaving out which VMs the guards cover, with one warning', async () => {
    await setup()
    const status = await targon(['guard', 'status', '--json'])
    expect(status.code, status.stdout + status.stderr).toBe(0)
    expect(parseJson(status).data.coverage).toBeNull()
    expect(parseJson(status).warnings).toEqual([expect.stringMatching(/^which VMs the guards cover is left out: /)])
  })
})
