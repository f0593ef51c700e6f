/**
 * A shared machine: a second local user (OTHER_USER, a real account) creates paths before the user's own runs, and
 * the user's secrets must not reach other processes. Each test names what that user does first.
 */
import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {OTHER_USER, ROOT, otherUsersDir, parseJson, readableCli, runCli, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, useSimulator} from '../helpers/simulator.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const simulator = useSimulator({deleteLatencyMs: 1500})
const env = (extra: Record<string, string | undefined> = {}) => simulatorEnv(simulator.current, extra)
const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']
const asOther = (...args: string[]) => execFileSync('runuser', ['-u', OTHER_USER, '--', ...args], {encoding: 'utf8'})

async function oneVm(configDir: string): Promise<string> {
  const up = await runCli(UP, {env: env({TARGON_CONFIG_DIR: configDir})})
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0].uid as string
}

describe('locks that no one else can block', () => {
  it("deletes although the other user made the old lock directory in /tmp and owns the run's XDG_RUNTIME_DIR and TMPDIR", async () => {
    const uid = process.getuid?.() ?? 0
    const theirs = otherUsersDir('targon-theirs-runtime-', 0o777)
    asOther('mkdir', '-p', '-m', '777', join(theirs, 'targon-fleet'), `/tmp/targon-fleet-${uid}`)
    for (const extra of [{XDG_RUNTIME_DIR: theirs}, {TMPDIR: theirs, XDG_RUNTIME_DIR: undefined}]) {
      const configDir = tempDir('targon-config-')
      const vm = await oneVm(configDir)
      const down = await runCli(['down', '--all', '--json'], {env: env({...extra, TARGON_CONFIG_DIR: configDir})})
      expect(down.code, down.stdout + down.stderr).toBe(0)
      expect(parseJson(down).data.results.map((result: {uid: string}) => result.uid)).toContain(vm)
      expect(simulator.current.billing()).toEqual([])
    }

    rmSync(`/tmp/targon-fleet-${uid}`, {force: true, recursive: true})
  })

  it('keeps an interactive shell (XDG_RUNTIME_DIR) and cron (none, another HOME and TMPDIR) from deleting one VM at once', async () => {
    const vm = await oneVm(tempDir('targon-config-'))
    const [shell, cron] = await Promise.all([
      runCli(['down', vm, '--json'], {env: env({TARGON_CONFIG_DIR: tempDir('targon-a-'), XDG_RUNTIME_DIR: tempDir('targon-run-')})}),
      runCli(['down', vm, '--json'], {
        env: env({HOME: tempDir('targon-cron-home-'), TARGON_CONFIG_DIR: tempDir('targon-b-'), TMPDIR: tempDir('targon-tmp-')}),
      }),
    ])
    expect(shell.code, shell.stdout + shell.stderr).toBe(0)
    expect(cron.code, cron.stdout + cron.stderr).toBe(0)
    expect(simulator.current.requests('DELETE', vm).length).toBeGreaterThan(0)
    expect([...simulator.current.doubleDeletes]).toEqual([])
  })
})

describe('trust by owner and mode', () => {
  it('refuses a config directory the other user planted, with a 0600 key of theirs: their key is never registered', async () => {
    const planted = otherUsersDir('targon-planted-')
    asOther('mkdir', '-m', '700', join(planted, 'keys'))
    asOther('ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'theirs', '-f', join(planted, 'keys', 'id_ed25519'))
    const keyPosts = () => simulator.current.requests('POST', '/ssh-keys').length
    const before = keyPosts()
    for (const args of [UP, ['status', '--json'], ['down', '--all', '--json']]) {
      const run = await runCli(args, {env: env({TARGON_CONFIG_DIR: planted})})
      expect(run.code, `${args[0]}: ${run.stdout}${run.stderr}`).toBe(3)
      expect(parseJson(run).error.message).toMatch(/belongs to another user \(uid \d+\)/)
    }

    expect(keyPosts()).toBe(before)
  })

  it('follows a config directory that is a symbolic link once and checks its target; a link to a link, or to theirs, is refused', async () => {
    const base = tempDir('targon-links-')
    const real = join(base, 'dotfiles-targon')
    mkdirSync(real, {mode: 0o700})
    symlinkSync(real, join(base, 'link'))
    symlinkSync(join(base, 'link'), join(base, 'link-to-link'))
    symlinkSync(otherUsersDir('targon-theirs-'), join(base, 'link-to-theirs'))
    const own = await runCli(UP, {env: env({TARGON_CONFIG_DIR: join(base, 'link')})})
    expect(own.code, own.stdout + own.stderr).toBe(0)
    expect(existsSync(join(real, 'keys', 'id_ed25519'))).toBe(true)
    for (const [link, problem] of [
      ['link-to-link', /itself a link/],
      ['link-to-theirs', /belongs to another user/],
    ] as const) {
      const run = await runCli(['status', '--json'], {env: env({TARGON_CONFIG_DIR: join(base, link)})})
      expect(run.code, run.stdout + run.stderr).toBe(3)
      expect(parseJson(run).error.message).toMatch(problem)
    }

    const down = await runCli(['down', '--all', '--json'], {env: env({TARGON_CONFIG_DIR: join(base, 'link')})})
    expect(down.code).toBe(0)
  })

  it("refuses a config directory of root's inside the other user's open folder (0777, no sticky bit): they could swap it", async () => {
    const theirs = otherUsersDir('targon-theirs-open-', 0o777)
    const config = join(theirs, 'config')
    mkdirSync(config, {mode: 0o700})
    for (const args of [UP, ['status', '--json'], ['config', 'set', 'fleet', 'x', '--json']]) {
      const run = await runCli(args, {env: env({TARGON_CONFIG_DIR: config})})
      expect(run.code, `${args[0]}: ${run.stdout}${run.stderr}`).toBe(3)
      expect(parseJson(run).error).toMatchObject({
        code: 'CONFIG',
        hint: "set TARGON_CONFIG_DIR to a directory in folders of your own or root's",
        message: expect.stringMatching(
          new RegExp(`^config directory ${config} is inside ${theirs}, which belongs to another user \\(uid \\d+\\)$`),
        ),
      })
    }

    expect(readdirSync(config)).toEqual([])
    expect(simulator.current.billing()).toEqual([])
  })

  it("under sudo, refuses the invoking user's config directory with a hint to run without sudo", async () => {
    const theirs = otherUsersDir('targon-sudo-')
    const uid = execFileSync('id', ['-u', OTHER_USER], {encoding: 'utf8'}).trim()
    const run = await runCli(['status', '--json'], {env: env({SUDO_UID: uid, SUDO_USER: OTHER_USER, TARGON_CONFIG_DIR: theirs})})
    expect(run.code).toBe(3)
    expect(parseJson(run).error.hint).toBe(
      `it is ${OTHER_USER}'s: run targon without sudo, or set TARGON_CONFIG_DIR to a directory of root's`,
    )
  })

  it("refuses a host-key pin file that the other user owns, rather than trusting the VM's key anew", async () => {
    const configDir = tempDir('targon-config-')
    const vm = await oneVm(configDir)
    mkdirSync(join(configDir, 'known_hosts.d'), {mode: 0o700})
    const pin = join(configDir, 'known_hosts.d', vm)
    writeFileSync(pin, `targon-${vm} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n`, {mode: 0o600})
    execFileSync('chown', [OTHER_USER, pin])
    const ssh = await runCli(['ssh', vm, '--print', '--json'], {env: env({TARGON_CONFIG_DIR: configDir})})
    expect(ssh.code).toBe(3)
    expect(parseJson(ssh).error.message).toMatch(/belongs to another user/)
    expect(statSync(pin).uid).not.toBe(0)
    expect((await runCli(['down', vm, '--json'], {env: env({TARGON_CONFIG_DIR: configDir})})).code).toBe(0)
  })

  it('never changes the mode of an existing directory: a shared one is refused and stays as it was', async () => {
    const shared = tempDir('targon-shared-')
    chmodSync(shared, 0o1777)
    const run = await runCli(['config', 'set', 'fleet', 'x', '--json'], {env: env({TARGON_CONFIG_DIR: shared})})
    expect(run.code).toBe(3)
    expect(parseJson(run).error.message).toMatch(/writable by other users/)
    expect(statSync(shared).mode & 0o7777).toBe(0o1777)
  })

  it('ignores a record that another user owns, with a warning, and does not act on it', async () => {
    const configDir = tempDir('targon-config-')
    const vm = await oneVm(configDir)
    const records = join(configDir, 'vms', 'acme')
    const file = readdirSync(records).find((name) => name.endsWith('.json')) as string
    execFileSync('chown', [OTHER_USER, join(records, file)])
    const status = await runCli(['status', '--json'], {env: env({TARGON_CONFIG_DIR: configDir})})
    expect(status.code).toBe(0)
    expect(parseJson(status).warnings.join('\n')).toMatch(/ignoring unreadable local record .*belongs to another user/)
    const down = await runCli(['down', vm, '--json'], {env: env({TARGON_CONFIG_DIR: configDir})})
    expect(down.code).toBe(0)
  })
})

describe('the start-up code cache', () => {
  /**
   * A V8 code cache is accepted for any source of the same length: a cache compiled from other code of that length
   * runs that code. The other user plants one for the CLI's bundle that writes a marker file.
   */
  async function plantCache(cacheRoot: string, marker: string): Promise<void> {
    // The cache files' names, as a run of the CLI writes them (into a cache of root's own).
    const probe = tempDir('targon-cache-probe-')
    await runCli(['--help'], {env: {XDG_CACHE_HOME: probe}})
    const names = readdirSync(join(probe, 'targon-fleet'))
    const craft = join(cacheRoot, 'craft.cjs')
    writeFileSync(
      craft,
      `const {readFileSync, writeFileSync} = require('node:fs')
const {Script} = require('node:vm')
require('node:v8').setFlagsFromString('--liftoff-only')
const [bundle, filename, out, marker] = process.argv.slice(2)
const real = \`(function (exports, require, module, __filename, __dirname) {\${readFileSync(bundle, 'utf8')}\\n})\`
const head = \`(function (exports, require, module, __filename, __dirname) {require('fs').writeFileSync(\${JSON.stringify(marker)}, 'ran');/*\`
const evil = head + ' '.repeat(real.length - head.length - 5) + '*/\\n})'
writeFileSync(out, new Script(evil, {filename}).createCachedData())
`,
    )
    chmodSync(craft, 0o644)
    asOther('mkdir', '-p', '-m', '777', join(cacheRoot, 'targon-fleet'))
    for (const name of names.filter((each) => each.startsWith('cli-')))
      asOther(
        process.execPath,
        craft,
        join(readableCli(), 'dist', 'cli.cjs'),
        join(ROOT, 'dist', 'cli.cjs'),
        join(cacheRoot, 'targon-fleet', name),
        marker,
      )
  }

  it('runs no code from a cache directory that the other user owns, and writes nothing there', async () => {
    const shared = otherUsersDir('targon-cache-', 0o755)
    const markerDir = otherUsersDir('targon-marker-', 0o777)
    const marker = join(markerDir, 'planted-code-ran')
    await plantCache(shared, marker)
    const planted = readdirSync(join(shared, 'targon-fleet')).sort()
    for (let run = 0; run < 2; run++) {
      const help = await runCli(['--help'], {env: {XDG_CACHE_HOME: shared}})
      expect(help.code).toBe(0)
    }

    expect(existsSync(marker)).toBe(false)
    expect(readdirSync(join(shared, 'targon-fleet')).sort()).toEqual(planted)
    // The plant is live: the same cache in a directory of root's own does run (so the check above can fail).
    const own = tempDir('targon-own-cache-')
    execFileSync('cp', ['-r', join(shared, 'targon-fleet'), own])
    execFileSync('chown', ['-R', 'root:root', own])
    chmodSync(join(own, 'targon-fleet'), 0o700)
    await runCli(['--help'], {env: {XDG_CACHE_HOME: own}})
    expect(readFileSync(marker, 'utf8')).toBe('ran')
  })
})

describe('no secret leaves', () => {
  const key = DEFAULT_TOKEN

  it('never quotes a broken config file, which holds the API key, in any output', async () => {
    const brokenFiles = [
      `{"api-key": ${key}}`,
      `{"api-key": "${key}", "fleet": }`,
      `{"api-key": "${key}"`,
      `["${key}"]`,
      `{"api-key": ["${key}"]}`,
      `{"api-key": "${key} ${key}"}`,
      `{"org": "${key}", "api-key": 7}`,
      `{"api-key": "${key}", "profile": "${key}"}`,
      `{"api-key": "${key}", "profiles": {"x": "${key}"}, "profile": "x"}`,
    ]
    const commands = [
      ['status'],
      ['status', '--json'],
      ['config', 'list'],
      ['config', 'get', 'org'],
      ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap'],
      ['down', '--all'],
    ]
    // In process, one after another: 54 processes cost more than the runs.
    const runs: {label: string; output: string}[] = []
    for (const text of brokenFiles) {
      const configDir = tempDir('targon-broken-')
      chmodSync(configDir, 0o700)
      writeFileSync(join(configDir, 'config.json'), text, {mode: 0o600})
      for (const args of commands) {
        const run = await runInProcess(args, {env: {TARGON_API_URL: simulator.current.url, TARGON_CONFIG_DIR: configDir}})
        runs.push({label: `${text} ${args.join(' ')}`, output: run.stdout + run.stderr})
      }
    }
    for (const {label, output} of runs) {
      for (let start = 0; start + 6 <= key.length; start++) expect(output, label).not.toContain(key.slice(start, start + 6))
    }

    expect(simulator.current.billing()).toEqual([])
  })

  it('refuses a plain-http API URL to another host (the key would travel in clear text), and takes one to this machine', async () => {
    for (const url of ['http://api.targon.com', 'http://10.0.0.8:8080', 'http://127.0.0.1.example.com']) {
      const run = await runCli(['status', '--json'], {env: {TARGON_API_KEY: key, TARGON_API_URL: url}})
      expect(run.code, url).toBe(3)
      expect(parseJson(run).error.message).toMatch(/plain http to another host/)
    }

    const port = new URL(simulator.current.url).port
    for (const host of ['127.0.0.1', 'localhost']) {
      const run = await runCli(['status', '--json'], {env: {TARGON_API_KEY: key, TARGON_API_URL: `http://${host}:${port}`}})
      expect(run.code, `${host}: ${run.stdout}${run.stderr}`).toBe(0)
    }
  })

  it("gives the ssh child no TARGON_ variable and nothing that carries the key, though the user's ssh config is still read", async () => {
    // The other user's own run: their config directory, their ~/.ssh/config whose ProxyCommand records its environment.
    const home = execFileSync('getent', ['passwd', OTHER_USER], {encoding: 'utf8'}).split(':')[5] as string
    const configDir = join(otherUsersDir('targon-their-config-'), 'config')
    const envFile = join(otherUsersDir('targon-env-', 0o755), 'ssh-child.env')
    const theirEnv = env({HOME: home, MY_COPY_OF_THE_KEY: `x${key}x`, TARGON_CONFIG_DIR: configDir, TARGON_VERBOSE_EXTRA: 'seen'})
    const up = await runCli(UP, {env: theirEnv, user: OTHER_USER})
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm = parseJson(up).data.vms[0].uid as string
    // No VM answers here: a pin lets ssh start without a first contact.
    asOther('mkdir', '-p', '-m', '700', join(configDir, 'known_hosts.d'))
    asOther(
      'sh',
      '-c',
      `echo 'targon-${vm} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl' > ${join(configDir, 'known_hosts.d', vm)}`,
    )
    asOther('mkdir', '-p', '-m', '700', join(home, '.ssh'))
    asOther(
      'sh',
      '-c',
      `printf 'Host *\\n  ProxyCommand sh -c "env > ${envFile}; exit 1"\\n' > ${join(home, '.ssh', 'config')} && chmod 600 ${join(home, '.ssh', 'config')}`,
    )
    try {
      const ssh = await runCli(['ssh', vm, '--', 'true'], {env: theirEnv, user: OTHER_USER})
      expect(ssh.code, ssh.stdout + ssh.stderr).toBe(255)
      const childEnv = readFileSync(envFile, 'utf8')
      expect(childEnv).toContain(`HOME=${home}`)
      expect(childEnv).not.toMatch(/^TARGON_/m)
      expect(childEnv).not.toContain(key)
    } finally {
      rmSync(join(home, '.ssh'), {force: true, recursive: true})
      await runCli(['down', '--all'], {env: theirEnv, user: OTHER_USER})
    }
  })
})
