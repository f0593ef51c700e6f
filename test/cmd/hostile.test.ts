/**
 * Answers that a compromised proxy or a server bug could give: identifiers that would name paths outside the config
 * directory or add lines to an SSH config, and addresses that are not addresses. They stop at the API boundary
 * (BAD_RESPONSE, exit 5): nothing outside the config directory is touched, and no foreign directive is printed.
 */
import {existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'
import {SEED_ORGS} from '../simulator/seed.js'
import type {TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator | undefined

afterEach(async () => {
  await sim?.stop()
  sim = undefined
})

/** A home with a sentinel directory beside the config directory, which the hostile names point at. */
function sandbox() {
  const home = tempDir('targon-hostile-')
  const sentinel = join(home, 'sentinel')
  mkdirSync(sentinel)
  writeFileSync(join(sentinel, 'authorized_keys'), 'keep me\n')
  return {configDir: join(home, 'config'), sentinel}
}

describe('hostile answers', () => {
  for (const [what, uid] of [
    ['a uid that climbs out of the config directory', '../../sentinel/authorized_keys'],
    ['a uid with a newline and an SSH directive', 'wrk-1\nHost *\n  ProxyCommand touch /tmp/pwned'],
  ] as const) {
    it(`${what} is reported as an invalid answer, never deleted in bulk, deleted by its exact uid, and nothing outside changes`, async () => {
      sim = await startSimulator()
      const {configDir, sentinel} = sandbox()
      const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir})
      sim.addWorkload({name: 'tcli-default-evil', status: 'running', uid})

      const status = parseJson(await runInProcess(['status', '--json'], {env}))
      expect(status.data.invalid_answers).toEqual([{billing: null, problem: expect.stringContaining('uid'), uid}])
      expect(status.data.totals.unknown_billing_count).toBe(1)
      const config = await runInProcess(['ssh', '--config'], {env})
      expect(config.stdout).not.toContain('ProxyCommand')
      expect((await runInProcess(['exec', '--json', '--', 'true'], {env})).code).toBe(4)
      // Adopting by name never takes it.
      expect((await runInProcess(['up', '--name', 'evil', '--no-bootstrap', '--json'], {env})).code).toBe(4)

      const bulk = await runInProcess(['down', '--all', '--json'], {env})
      expect(bulk.code, bulk.stdout).toBe(11)
      expect(parseJson(bulk).data.results).toMatchObject([{action: 'invalid-answer', billing: null, uid}])
      expect(sim.requests('DELETE', /\/workloads\//)).toEqual([])
      expect(sim.billing()).toHaveLength(1)

      const named = await runInProcess(['down', uid, '--json'], {env})
      expect(named.code, named.stdout).toBe(0)
      expect(sim.billing()).toEqual([])
      expect(readdirSync(sentinel)).toEqual(['authorized_keys'])
    })
  }

  it('a sweep reports an invalid answer as down does: warned about, listed in --json, never deleted, exit 11', async () => {
    sim = await startSimulator()
    const {configDir} = sandbox()
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir})
    const uid = '../../sentinel/authorized_keys'
    sim.addWorkload({name: 'tcli-default-evil', status: 'running', uid})

    const sweep = await runInProcess(['sweep', '--json'], {env})
    expect(sweep.code, sweep.stdout).toBe(11)
    const json = parseJson(sweep)
    expect(json.data.results).toEqual([
      {action: 'invalid-answer', billing: null, error: expect.stringContaining('uid'), name: null, reason: null, uid},
    ])
    expect(json.data.survivors).toEqual([uid])
    expect(json.warnings).toContainEqual(expect.stringContaining('fail the checks of the API'))
    expect(sim.requests('DELETE', /\/workloads\//)).toEqual([])

    const text = await runInProcess(['sweep'], {env})
    expect(text.code).toBe(11)
    expect(text.stderr).toContain('fail the checks of the API')
    expect(text.stdout.trimEnd().split('\n')).toEqual(['NAME\tUID\tLIMIT\tRESULT\tBILLING', `-\t${uid}\t-\tinvalid-answer\t?`])
  })

  it('an address that is not an address (SSH options in public_ip) makes the VM an invalid answer: no ssh command is built', async () => {
    sim = await startSimulator()
    const {configDir} = sandbox()
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir})
    const vm = sim.addWorkload({name: 'tcli-default-evil', status: 'running'})
    vm.endpoint = {public_ip: '127.0.0.1 -oProxyCommand=touch${IFS}/tmp/pwned', ssh_port: 22}
    const status = parseJson(await runInProcess(['status', '--json'], {env}))
    expect(status.data.invalid_answers).toEqual([{billing: null, problem: expect.stringContaining('public_ip'), uid: vm.uid}])
    const ssh = await runInProcess(['ssh', 'evil', '--print'], {env})
    expect(ssh.code).toBe(4)
    expect(ssh.stdout).not.toContain('ProxyCommand')
  })

  it('an org slug that climbs out of the config directory is a bad response, and no record is written', async () => {
    sim = await startSimulator({orgs: [{...SEED_ORGS[0]!, slug: '../../sentinel'}], tokens: {tgn_sim_test_key: ['../../sentinel']}})
    const {configDir, sentinel} = sandbox()
    const result = await runInProcess(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {
      env: simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir}),
    })
    expect(parseJson(result).error.code).toBe('BAD_RESPONSE')
    expect(readdirSync(sentinel)).toEqual(['authorized_keys'])
    expect(existsSync(join(configDir, 'vms'))).toBe(false)
  })
})

describe('a VM renamed to a name that breaks the naming rule', () => {
  it('is still ours by its owner project from a directory without its record: down --all deletes it by uid', async () => {
    sim = await startSimulator()
    const made = sandbox()
    const env = (configDir: string) => simulatorEnv(sim as TargonSimulator, {TARGON_CONFIG_DIR: configDir, TARGON_OWNER: 'alice'})
    const up = parseJson(
      await runInProcess(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {env: env(made.configDir)}),
    )
    const {uid} = up.data.vms[0]
    sim.renameHostile(uid, '<!channel> evil')
    // Another machine of the same owner: no local record, only the owner project says whose it is.
    const elsewhere = sandbox().configDir
    const status = parseJson(await runInProcess(['status', '--json'], {env: env(elsewhere)}))
    expect(status.data.vms).toMatchObject([{name: null, owner: 'alice', uid}])
    expect(status.warnings.join('\n')).toContain(
      `${uid} has a name that breaks Targon's naming rule: it is shown by its uid and its name is never used (it is still one of this tool's VMs)`,
    )
    const down = await runInProcess(['down', '--all', '--json'], {env: env(elsewhere)})
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'deleted', name: null, uid}])
    expect(sim.billing()).toEqual([])
  })
})

describe('oversized answers', () => {
  it('a listing over 16 MiB is a bad response; a console log over it keeps its end, with a warning', async () => {
    sim = await startSimulator()
    const {configDir} = sandbox()
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir})
    const huge = 17 * 1024 * 1024
    sim.inject({body: `{"items": [], "pad": "${'x'.repeat(huge)}"}`, method: 'GET', path: /\/workloads$/, status: 200, times: 1})
    const status = parseJson(await runInProcess(['status', '--json'], {env}))
    expect(status.error).toMatchObject({code: 'BAD_RESPONSE', message: expect.stringContaining('more than 16 MiB')})

    const vm = sim.addWorkload({name: 'tcli-default-chatty', status: 'running'})
    sim.inject({
      body: `${'boot noise\n'.repeat(huge / 11)}the last line\n`,
      contentType: 'text/plain',
      method: 'GET',
      path: '/logs',
      status: 200,
    })
    const logs = parseJson(await runInProcess(['logs', vm.uid, '--tail', '1', '--json'], {env}))
    expect(logs.ok).toBe(true)
    expect(logs.data.lines).toEqual(['the last line'])
    expect(logs.warnings.join()).toContain('is over 16 MiB: only its end is shown')
  })
})

describe('control characters from the API', () => {
  it('never reach the terminal raw: tables, warnings and errors show them escaped; --json keeps them exact', async () => {
    sim = await startSimulator()
    const {configDir} = sandbox()
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir})
    // A window title, a cleared screen and a clipboard write (OSC 52), in a name and a state message.
    const evil = 'tcli-default-x\u001b]0;pwned\u0007\u001b[2J\u001b]52;c;ZWNobyBoaQ==\u0007\u009b31m'
    const vm = sim.addWorkload({message: 'boom\r\n\u001b[1Anothing bills', name: evil, status: 'error'})
    const human = await runInProcess(['status', '--all-fleets', '--any-origin'], {env})
    expect(human.code, human.stderr).toBe(0)
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    for (const output of [human.stdout, human.stderr]) expect(output).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/)
    // A name with control characters breaks Targon's naming rule: the VM is shown by its uid, the name nowhere.
    expect(human.stdout).toContain(vm.uid)
    expect(human.stdout + human.stderr).not.toContain('pwned')
    const json = parseJson(await runInProcess(['status', '--all-fleets', '--any-origin', '--json'], {env}))
    expect(json.data.vms.find((each: {uid: string}) => each.uid === vm.uid).name).toBeNull()
    expect(JSON.stringify(json)).not.toContain('pwned')
  })
})

describe('a create answered with an unusable uid', () => {
  it('is never sent again: what it made is deleted by its exact uid (or named as a leftover), and nothing bills', async () => {
    const {configDir, sentinel} = sandbox()
    sim = await startSimulator({createdUid: () => '../../sentinel/authorized_keys'})
    const up = await runInProcess(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {
      env: simulatorEnv(sim, {TARGON_CONFIG_DIR: configDir, TARGON_RECONCILE_WINDOW: '0.5'}),
    })
    const doc = parseJson(up)
    expect(doc.error.code, up.stdout).toBe('BAD_RESPONSE')
    expect(sim.requests('POST', /\/workloads$/)).toHaveLength(1)
    // Never deployed: Targon refuses to delete it (500); it does not run, and it is named.
    expect(sim.requests('DELETE', /\/workloads\//)).toHaveLength(1)
    expect(doc.warnings.join()).toContain('unusable uid')
    expect(sim.billing()).toEqual([])
    expect(readdirSync(sentinel)).toEqual(['authorized_keys'])
  })
})
