/**
 * targon guard against the real crontab (root's, and a second local user's) and real systemd unit files, checked by
 * systemd-analyze verify (no systemd runs here: user units and linger are not exercised). What is scheduled runs:
 * the crontab entry is executed as cron would, with no environment but the simulator's address. No secret is ever
 * written into a crontab line or a unit.
 */
import {execFileSync, spawn, spawnSync} from 'node:child_process'
import {chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {OTHER_USER, parseJson, readableCli, runCli, otherUsersDir, tempDir, writeConfigFile} from '../helpers/cli.js'
import {targonFor} from '../helpers/fixture.js'
import {simulatorEnv, startSimulator, useSimulator} from '../helpers/simulator.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const sim = useSimulator()
// Every run names its own config directory; the key comes from there unless a run sets it.
const targon = targonFor(() => ({configDir: '', sim: sim.current}), {inProcess: true, env: {TARGON_API_KEY: undefined}})
const NOTIFY_SECRET = 'notify-secret-token-77'
const HEARTBEAT_SECRET = 'heartbeat-secret-token-88'
const SECRETS = [DEFAULT_TOKEN, NOTIFY_SECRET, HEARTBEAT_SECRET]

/** A config directory with the key, the API URL (the simulator's) and both notification URLs stored, as a guard needs it. */
function guardedDir(settings: Record<string, unknown> = {}): string {
  const dir = tempDir('targon-guard-')
  writeConfigFile(dir, {
    'api-key': DEFAULT_TOKEN,
    'api-url': sim.current.url,
    // On this machine, where nothing listens: the sweep's ping fails at once, with a warning.
    'heartbeat-url': `http://127.0.0.1:9/${HEARTBEAT_SECRET}`,
    'notify-url': `http://127.0.0.1:9/${NOTIFY_SECRET}`,
    ...settings,
  })
  return dir
}

function crontabOf(user?: string): string {
  const listed = spawnSync('crontab', user ? ['-l', '-u', user] : ['-l'], {encoding: 'utf8'})
  return listed.status === 0 ? listed.stdout : ''
}

function setCrontab(text: string, user?: string): void {
  if (text === '') spawnSync('crontab', user ? ['-r', '-u', user] : ['-r'])
  else execFileSync('crontab', user ? ['-u', user, '-'] : ['-'], {input: text})
}

function expectNoSecrets(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret)
}

const UNIT_DIR = '/etc/systemd/system'
const ourUnits = () => readdirSync(UNIT_DIR).filter((name) => name.startsWith('targon-guard-'))

let rootCrontab = ''
let otherCrontab = ''
let unitsBefore: string[] = []
beforeAll(() => {
  rootCrontab = crontabOf()
  otherCrontab = crontabOf(OTHER_USER)
  unitsBefore = ourUnits()
})
afterAll(() => {
  setCrontab(rootCrontab)
  setCrontab(otherCrontab, OTHER_USER)
})

describe('guard --cron', () => {
  it('installs one line in the real crontab, idempotently, keeps the rest, runs as cron would, and uninstalls exactly it', async () => {
    const before = '# a line of the user that the guard must keep\n17 3 * * * /bin/true\n'
    setCrontab(before)
    const dir = guardedDir()
    // A process: the line names the CLI that installed it, which cron then runs.
    const install = await targon(['guard', 'install', '--cron', '--every', '10m', '--json'], {config: dir, inProcess: false})
    expect(install.code, install.stdout + install.stderr).toBe(0)
    const installed = parseJson(install).data
    expect(installed).toMatchObject({
      enabled: null,
      installed: {config_dir: dir, every_seconds: 600, kind: 'cron', org: 'acme', profile: 'default'},
      replaced: false,
    })
    const crontab = crontabOf()
    expect(crontab.startsWith(before)).toBe(true)
    const lines = crontab.slice(before.length).trim().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toBe(`# targon guard: org=acme owner=- profile=default dir=${dir} (targon guard uninstall removes it)`)
    expect(lines[1]).toBe(
      `*/10 * * * * TARGON_CONFIG_DIR=${dir} ${process.execPath} ${installed.installed.cli} sweep --profile default --guard --json >>${dir}/guard/default.log 2>&1`,
    )
    expectNoSecrets(crontab)

    // Again: replaced, still one guard; the user's line kept.
    const again = await targon(['guard', 'install', '--cron', '--every', '10m', '--json'], {config: dir, inProcess: false})
    expect(parseJson(again).data.replaced).toBe(true)
    expect(crontabOf()).toBe(crontab)

    // What cron runs: the entry's command with no environment at all, through sh as cron does; the simulator's
    // address comes from the config file, as the key does.
    const entry = (lines[1] as string).split(' ').slice(5).join(' ')
    // Not spawnSync: the simulator answers from this process.
    const run = await new Promise<{code: number | null; stderr: string}>((resolve) => {
      const child = spawn('sh', ['-c', entry], {env: {}, stdio: ['ignore', 'ignore', 'pipe']})
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      child.on('close', (code) => resolve({code, stderr}))
    })
    expect(run.code, run.stderr).toBe(0)
    const log = readFileSync(join(dir, 'guard', 'default.log'), 'utf8')
    expect(statSync(join(dir, 'guard', 'default.log')).mode & 0o777).toBe(0o600)
    expect(JSON.parse(log)).toMatchObject({command: 'sweep', ok: true})
    expectNoSecrets(log)

    const status = await targon(['guard', 'status', '--json'], {config: dir})
    expect(status.code, status.stderr).toBe(0)
    const shown = parseJson(status).data
    expect(shown.guards).toMatchObject([{every_seconds: 600, kind: 'cron'}])
    expect(shown.last_runs).toMatchObject([{deleted: 0, exit_code: 0, skipped: false}])
    expect(Date.parse(shown.next_run_at) - Date.now()).toBeLessThanOrEqual(600_000)
    expect(shown.problems).toEqual([])

    // Covered: targon status says so, and up with a limit says nothing more about it.
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '1h', '--json'], {config: dir})
    expect(up.code, up.stderr).toBe(0)
    expect(parseJson(up).warnings.join('\n')).not.toContain('nothing on this machine enforces')
    const covered = await targon(['status', '--json'], {config: dir})
    expect(parseJson(covered).data.guard).toMatchObject({every_seconds: 600, kind: 'cron', last_exit_code: 0})
    expect((await targon(['status'], {config: dir})).stderr).toMatch(/Guard: cron every 10m, last run \S+ ago \(exit 0\)/)
    expect((await targon(['down', '--all', '--json'], {config: dir})).code).toBe(0)

    // A CLI that moved away is a problem that status names.
    setCrontab(crontabOf().replace(installed.installed.cli, '/opt/gone/bin/run.js'))
    const moved = parseJson(await targon(['guard', 'status', '--json'], {config: dir})).data
    expect(moved.problems.join('\n')).toContain('/opt/gone/bin/run.js')

    // Uninstalled, it says which limits recorded here no guard enforces any more.
    const limited = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '1h', '--max-cost', '5', '--json']
    expect((await targon(limited, {config: dir})).code).toBe(0)
    const uninstall = await targon(['guard', 'uninstall', '--json'], {config: dir})
    expect(uninstall.code, uninstall.stderr).toBe(0)
    expect(parseJson(uninstall).data.removed).toHaveLength(1)
    expect(parseJson(uninstall).warnings).toContain(
      'no guard enforces the TTL of 1 VM and the budget of 1 VM recorded here any more: run targon sweep yourself, or targon guard install again',
    )
    expect(crontabOf()).toBe(before)
    expect((await targon(['down', '--all', '--json'], {config: dir})).code).toBe(0)
  })

  it('refuses (exit 3) to schedule a CLI that another user could change: a folder above it, a file of it, a folder of theirs', async () => {
    setCrontab('')
    const dir = guardedDir()
    // A copy of the built package, in a folder of its own in /tmp (sticky, and the next step down is root's: safe).
    const tree = tempDir('targon-guard-tree-')
    chmodSync(tree, 0o755)
    const folder = join(tree, 'apps')
    const pkg = join(folder, 'targon')
    mkdirSync(folder, {mode: 0o755})
    cpSync(readableCli(), pkg, {recursive: true})
    const cli = join(pkg, 'bin', 'run.js')
    const install = () => targon(['guard', 'install', '--cron', '--json'], {cli: pkg, config: dir})
    const refusals: [() => void, string, string][] = [
      [() => chmodSync(folder, 0o777), `${folder} is writable by other users (mode 777)`, `run: chmod go-w ${folder}, or`],
      [
        () => chmodSync(join(pkg, 'dist', 'cli.cjs'), 0o664),
        `${join(pkg, 'dist', 'cli.cjs')} is writable by other users (mode 664)`,
        `run: chmod go-w ${join(pkg, 'dist', 'cli.cjs')}, or`,
      ],
      [() => execFileSync('chown', [OTHER_USER, folder]), `${folder} belongs to another user (uid `, 'install targon and node where'],
    ]
    for (const [unsafe, problem, fix] of refusals) {
      unsafe()
      const refused = await install()
      expect(refused.code, refused.stdout + refused.stderr).toBe(3)
      const {error} = parseJson(refused)
      expect(error.message).toContain(`the guard would run ${cli} (CLI), but ${problem}`)
      expect(error.hint).toContain(fix)
      expect(crontabOf()).toBe('')
      execFileSync('chown', ['root', folder])
      chmodSync(folder, 0o755)
      chmodSync(join(pkg, 'dist', 'cli.cjs'), 0o644)
    }

    const safe = await install()
    expect(safe.code, safe.stdout + safe.stderr).toBe(0)
    expect(parseJson(safe).data.installed.cli).toBe(cli)
    expect(crontabOf()).toContain(` ${cli} sweep `)
    expect((await targon(['guard', 'uninstall', '--json'], {cli: pkg, config: dir})).code).toBe(0)
    expect(crontabOf()).toBe('')
  })

  it('refuses (exit 3, with the fix) a key only in the environment, an owner only in the environment, a mixed selection, and a second guard', async () => {
    setCrontab('')
    const envOnly = tempDir('targon-guard-')
    const noKey = await targon(['guard', 'install', '--cron', '--json'], {config: envOnly, env: {TARGON_API_KEY: DEFAULT_TOKEN}})
    expect(noKey.code).toBe(3)
    expect(parseJson(noKey).error).toMatchObject({hint: 'store it for the guard: targon config set api-key'})
    const ownerEnv = await targon(['guard', 'install', '--cron', '--json'], {config: guardedDir(), env: {TARGON_OWNER: 'alice'}})
    expect(ownerEnv.code).toBe(3)
    expect(parseJson(ownerEnv).error.hint).toContain('targon config set owner alice')

    const first = guardedDir({owner: 'alice'})
    const installed = await targon(['guard', 'install', '--cron'], {config: first})
    expect(installed.code, installed.stderr).toBe(0)
    // What it did and how to check it are progress, on stderr: without --json, install has no result for stdout.
    expect(installed.stdout).toBe('')
    expect(installed.stderr).toContain('Check it with: targon guard status')
    const second = await targon(['guard', 'install', '--cron', '--json'], {config: guardedDir({owner: 'alice'})})
    expect(second.code).toBe(3)
    expect(parseJson(second).error.hint).toBe(`remove it first: TARGON_CONFIG_DIR=${first} targon guard uninstall --profile default`)
    expect(crontabOf().match(/# targon guard:/g)).toHaveLength(1)
    expect((await targon(['guard', 'uninstall'], {config: first})).code).toBe(0)
    expect(crontabOf()).toBe('')

    // Alice and Bob each rent a VM (in an org of their own here); a directory with no owner set would sweep a mix.
    const shared = await startSimulator()
    try {
      const inShared = (args: string[], dir: string) =>
        runCli(args, {env: simulatorEnv(shared, {TARGON_API_KEY: undefined, TARGON_CONFIG_DIR: dir})})
      for (const owner of ['alice', 'bob']) {
        const up = await inShared(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], guardedDir({owner}))
        expect(up.code, up.stderr).toBe(0)
      }
      const mixed = await inShared(['guard', 'install', '--cron', '--json'], guardedDir({'api-url': shared.url}))
      expect(mixed.code, mixed.stdout).toBe(3)
      expect(parseJson(mixed).error.message).toContain("the guard's sweep would be refused: the selection holds VMs of more than one owner")
      // Not the sweep's own hint (--any-owner, which guard install does not take): the guard's fix is its owner.
      expect(parseJson(mixed).error.hint).toBe('set the owner whose VMs the guard sweeps: targon config set owner NAME')
      expect(crontabOf()).toBe('')
    } finally {
      await shared.stop()
    }
  })

  it('refuses (exit 3) an owner in the config file that is no owner name: it never reaches a crontab line', async () => {
    const dir = guardedDir({owner: 'alice\n* * * * * touch /tmp/targon-guard-owner #'})
    const print = await targon(['guard', 'print', '--cron', '--json'], {config: dir})
    expect(print.code, print.stdout + print.stderr).toBe(3)
    expect(parseJson(print).error.message).toContain(': owner')
    expect(print.stdout).not.toContain('touch /tmp/targon-guard-owner')
  })

  it('uninstall leaves a marker whose next line is not the guard entry, with a warning', async () => {
    const dir = guardedDir()
    const edited = `# targon guard: org=acme owner=- profile=default dir=${dir} (targon guard uninstall removes it)\n17 3 * * * /usr/local/bin/backup\n`
    setCrontab(edited)
    const uninstall = await targon(['guard', 'uninstall', '--json'], {config: dir})
    expect(uninstall.code, uninstall.stderr).toBe(0)
    const doc = parseJson(uninstall)
    expect(doc.data.removed).toEqual([])
    expect(doc.warnings.join('\n')).toContain("whose next line is not the guard's entry: both are left as they are")
    expect(crontabOf()).toBe(edited)
    setCrontab('')
  })

  it("installs into another local user's own crontab when that user runs it", async () => {
    const dir = otherUsersDir('targon-guard-other-')
    const config = join(dir, 'config')
    // Their key, stored by them in their own config directory.
    const stored = await targon(['config', 'set', 'api-key'], {config, input: `${DEFAULT_TOKEN}\n`, user: OTHER_USER})
    expect(stored.code, stored.stderr).toBe(0)
    expect((await targon(['config', 'set', 'api-url', sim.current.url], {config, user: OTHER_USER})).code).toBe(0)
    const install = await targon(['guard', 'install', '--cron', '--json'], {config, user: OTHER_USER})
    expect(install.code, install.stdout + install.stderr).toBe(0)
    const theirs = crontabOf(OTHER_USER)
    expect(theirs).toContain(
      `TARGON_CONFIG_DIR=${config} ${process.execPath} ${join(readableCli(), 'bin', 'run.js')} sweep --profile default`,
    )
    expectNoSecrets(theirs)
    // Root's crontab is untouched.
    expect(crontabOf()).not.toContain(config)
    const uninstall = await targon(['guard', 'uninstall', '--json'], {config, user: OTHER_USER})
    expect(uninstall.code, uninstall.stderr).toBe(0)
    expect(crontabOf(OTHER_USER)).toBe('')
  })
})

describe('limits the guard reads from the config file', () => {
  it('sweep takes min-runway and idle-limit from the config when no flag gives them, and a flag wins', async () => {
    const dir = guardedDir()
    const set = async (key: string, value: string) => {
      const done = await targon(['config', 'set', key, value], {config: dir})
      expect(done.code, done.stderr).toBe(0)
    }

    await set('min-runway', '365d')
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '5h', '--json'], {config: dir})
    expect(up.code, up.stderr).toBe(0)
    try {
      const fromConfig = await targon(['sweep', '--json'], {config: dir})
      expect(fromConfig.code, fromConfig.stdout + fromConfig.stderr).toBe(14)
      const doc = parseJson(fromConfig)
      expect(doc.error.code).toBe('RUNWAY_SHORT')
      expect(doc.data.selection).toMatchObject({min_runway_hours: 8760})
      const flagged = await targon(['sweep', '--min-runway', '1h', '--json'], {config: dir})
      expect(flagged.code, flagged.stdout + flagged.stderr).toBe(0)
      expect(parseJson(flagged).data.selection).toMatchObject({min_runway_hours: 1})
    } finally {
      expect((await targon(['down', '--all', '--json'], {config: dir})).code).toBe(0)
    }

    // The idle limit of VMs without their own (none bill here: the selection says which limit the sweep applied).
    await set('idle-limit', '45m')
    const idle = await targon(['sweep', '--json'], {config: dir})
    expect(idle.code, idle.stdout + idle.stderr).toBe(0)
    expect(parseJson(idle).data.selection).toMatchObject({idle_limit_seconds: 2700, min_runway_hours: 8760})
    const idleFlag = await targon(['sweep', '--idle-limit', '1h', '--json'], {config: dir})
    expect(parseJson(idleFlag).data.selection).toMatchObject({idle_limit_seconds: 3600})
    // A value that is not a duration is refused when set, and the crontab line never carries these limits.
    expect((await targon(['config', 'set', 'min-runway', '6'], {config: dir})).code).toBe(2)
    expect((await targon(['guard', 'print', '--cron'], {config: dir})).stdout).not.toMatch(/runway|idle/)
  })
})

describe('guard --systemd', () => {
  it('prints units that systemd-analyze verify accepts, with no secret in them', async () => {
    const dir = guardedDir()
    const out = tempDir('targon-units-')
    const print = await targon(['guard', 'print', '--systemd', '--every', '2h', '--dir', out, '--json'], {config: dir})
    expect(print.code, print.stdout + print.stderr).toBe(0)
    const files = parseJson(print).data.files as string[]
    expect(files.map((file) => file.slice(out.length + 1))).toEqual([
      expect.stringMatching(/^targon-guard-[0-9a-f]{12}\.service$/),
      expect.stringMatching(/\.timer$/),
    ])
    const verify = spawnSync('systemd-analyze', ['verify', '--man=no', ...files], {encoding: 'utf8'})
    expect(verify.status, verify.stdout + verify.stderr).toBe(0)
    const text = files.map((file) => readFileSync(file, 'utf8')).join('\n')
    expect(text).toContain('OnCalendar=*-*-* 00/2:00:00')
    expect(text).toContain(`Environment=TARGON_CONFIG_DIR=${dir}`)
    // Printed as root: a system service, run as the owner of the config directory (root's here), said explicitly.
    expect(text).toContain('\nUser=root\n')
    expectNoSecrets(text)
    const cron = await targon(['guard', 'print', '--cron'], {config: dir})
    expect(cron.stdout).toMatch(/^# targon guard: org=acme /)
    expectNoSecrets(cron.stdout)
  })

  it("refuses, as root, a system guard for another user's config directory: never a sweep of theirs run as root", async () => {
    const config = join(otherUsersDir('targon-guard-other-'), 'config')
    const stored = await targon(['config', 'set', 'api-key'], {config: config, input: `${DEFAULT_TOKEN}\n`, user: OTHER_USER})
    expect(stored.code, stored.stderr).toBe(0)
    const refused = await targon(['guard', 'install', '--systemd', '--json'], {config: config})
    expect(refused.code, refused.stdout).toBe(3)
    expect(parseJson(refused).error.message).toContain('belongs to another user')
    expect(ourUnits()).toEqual(unitsBefore)
  })

  it('refuses a second guard of either kind for the same directory, or the same org and owner, with the fix', async () => {
    setCrontab('')
    const first = guardedDir({owner: 'alice'})
    const other = guardedDir({owner: 'alice'})
    const fix = `remove it first: TARGON_CONFIG_DIR=${first} targon guard uninstall --profile default`
    for (const [kind, second] of [
      ['--cron', '--systemd'],
      ['--systemd', '--cron'],
    ] as const) {
      const installed = await targon(['guard', 'install', kind, '--json'], {config: first})
      expect(installed.code, installed.stdout + installed.stderr).toBe(0)
      for (const dir of [first, other]) {
        const refused = await targon(['guard', 'install', second, '--json'], {config: dir})
        expect(refused.code, refused.stdout).toBe(3)
        expect(parseJson(refused).error).toMatchObject({code: 'CONFIG', hint: fix})
      }
      // Nothing of the second kind was written, and the first stays.
      expect(crontabOf().match(/# targon guard:/g)?.length ?? 0).toBe(kind === '--cron' ? 1 : 0)
      expect(ourUnits().length).toBe(unitsBefore.length + (kind === '--systemd' ? 2 : 0))
      expect(parseJson(await targon(['guard', 'uninstall', '--json'], {config: first})).data.removed).toHaveLength(1)
    }
    expect(crontabOf()).toBe('')
    expect(ourUnits()).toEqual(unitsBefore)
  })

  it('as root writes system units (enabling them needs a running systemd: a warning here), status shows them, uninstall removes them', async () => {
    const dir = guardedDir()
    const install = await targon(['guard', 'install', '--systemd', '--json'], {config: dir})
    expect(install.code, install.stdout + install.stderr).toBe(0)
    const doc = parseJson(install)
    const files = doc.data.installed.files as string[]
    expect(files.every((file) => file.startsWith(`${UNIT_DIR}/targon-guard-`) && existsSync(file))).toBe(true)
    expect(doc.data.enabled).toBe(false)
    expect(doc.warnings.join('\n')).toContain('enable --now')
    const verify = spawnSync('systemd-analyze', ['verify', '--man=no', ...files], {encoding: 'utf8'})
    expect(verify.status, verify.stdout + verify.stderr).toBe(0)
    expectNoSecrets(files.map((file) => readFileSync(file, 'utf8')).join('\n'))
    expect(readFileSync(files[0] as string, 'utf8')).toContain('\nType=oneshot\nUser=root\n')
    const status = parseJson(await targon(['guard', 'status', '--json'], {config: dir})).data
    expect(status.guards).toMatchObject([{every_seconds: 300, kind: 'systemd'}])
    expect(status.problems).toEqual([])
    // Installed an hour ago (as install recorded it) and never run: a problem, with the fix, in JSON and in text.
    writeFileSync(join(dir, 'guard', 'default.installed'), `${new Date(Date.now() - 3_600_000).toISOString()}\n`, {mode: 0o600})
    const never = parseJson(await targon(['guard', 'status', '--json'], {config: dir})).data.problems.join('\n')
    expect(never).toMatch(/no sweep has run since the guard was installed 1h\S* ago, with one due every 5m: is cron or the timer running/)
    expect((await targon(['guard', 'status'], {config: dir})).stderr).toContain('no sweep has run since the guard was installed')
    const uninstall = await targon(['guard', 'uninstall', '--json'], {config: dir})
    expect(parseJson(uninstall).data.removed).toMatchObject([{kind: 'systemd'}])
    expect(files.some((file) => existsSync(file))).toBe(false)
    expect(ourUnits()).toEqual(unitsBefore)
  })
})
