/**
 * `targon run` and `targon jobs` on simulated VMs that are real SSH hosts (needs root, like exec.test.ts); first, the
 * VMs' systemd-run and systemctl doubles, which play the transient units that jobs run as.
 */
import type {ChildProcess} from 'node:child_process'
import {cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {type CliOptions, errorLines, parseJson, signalWhen, tempDir, waitFor, writeConfigFile} from '../helpers/cli.js'
import {tree} from '../helpers/files.js'
import {useVmFixture} from '../helpers/fixture.js'
import {parseEvents} from '../helpers/events.js'
import {useWebhook} from '../helpers/webhook.js'
import IDLE_SAMPLER from '../../src/lib/adapters/bootstrap/idle-sampler.py'

/** A quick idle sampler and shim check on bootstrapped VMs. */
const simulated = useVmFixture({inProcess: true, env: {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
const {configDir, targon} = simulated
/** The version of the sampler this CLI installs. */
const SAMPLER_VERSION = /^VERSION = "(.*)"$/m.exec(IDLE_SAMPLER)?.[1]

/** One VM without the bootstrap (the doubles are there from boot): its name. */
async function rentBare(fleet: string): Promise<{name: string; uid: string}> {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

/** A command on the VM as ubuntu: its stdout, and its exit code. */
async function onVm(vm: string, command: string): Promise<{code: number; stdout: string}> {
  const result = await targon(['exec', '--vms', vm, '--json', '--', command])
  const doc = parseJson(result)
  return {code: doc.data.results[0].exit_code, stdout: (doc.data.results[0].tail as string[]).join('\n')}
}

describe('the systemd doubles of a simulated VM', () => {
  it('play transient units: --uid, WorkingDirectory, output to a file, is-active, show, stop', async () => {
    const vm = await rentBare('units')
    const show = 'systemctl show -p ActiveState,Result,ExecMainStatus,ExecMainStartTimestamp,User,WorkingDirectory'
    const start = await onVm(
      vm.name,
      "mkdir -p /home/ubuntu/w && sudo -n systemd-run --unit=demo --uid=ubuntu -p WorkingDirectory=/home/ubuntu/w -p StandardOutput=append:/home/ubuntu/w/log -p StandardError=append:/home/ubuntu/w/log --setenv=GREETING='hi there' /bin/bash -c 'id -un; pwd; echo \"$GREETING\"; echo oops >&2; touch made; sleep 30'",
    )
    expect(start).toMatchObject({code: 0, stdout: 'Running as unit: demo.service'})
    await waitFor(() => simulated.farm.vm(vm.uid).readFile('/home/ubuntu/w/log').includes('oops'))
    expect(simulated.farm.vm(vm.uid).readFile('/home/ubuntu/w/log')).toBe('ubuntu\n/home/ubuntu/w\nhi there\noops\n')
    expect(await onVm(vm.name, 'stat -c %U /home/ubuntu/w/made; systemctl is-active demo')).toEqual({code: 0, stdout: 'ubuntu\nactive'})
    const running = await onVm(vm.name, `${show} demo.service`)
    expect(running.stdout).toMatch(
      /^ActiveState=active\nResult=success\nExecMainStatus=0\nExecMainStartTimestamp=\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\nUser=ubuntu\nWorkingDirectory=\/home\/ubuntu\/w$/,
    )
    // A second unit of that name is refused while it runs; a non-root caller cannot start one.
    expect((await onVm(vm.name, 'sudo -n systemd-run --unit=demo /bin/true')).code).toBe(1)
    expect((await onVm(vm.name, 'systemd-run --unit=other /bin/true')).code).toBe(1)

    // stop ends the whole unit (its children too); a stopped transient unit is gone.
    expect(await onVm(vm.name, 'sudo -n systemctl stop demo; pgrep -x sleep || echo none')).toEqual({code: 0, stdout: 'none'})
    expect(await onVm(vm.name, 'systemctl is-active demo')).toEqual({code: 3, stdout: 'inactive'})
    expect((await onVm(vm.name, `${show} demo`)).stdout).toContain(
      'ActiveState=inactive\nResult=success\nExecMainStatus=0\nExecMainStartTimestamp=\n',
    )
    expect((await onVm(vm.name, 'sudo -n systemctl stop demo')).code).toBe(5)

    // A failing unit stays loaded as failed until reset-failed, unless --collect; a successful one is collected.
    const failed = await onVm(
      vm.name,
      "sudo -n systemd-run --unit=bad --uid=ubuntu /bin/bash -c 'exit 7' >/dev/null; sleep 1; systemctl is-active bad; systemctl show -p ActiveState,Result,ExecMainStatus --value bad",
    )
    expect(failed.stdout).toBe('failed\nfailed\nexit-code\n7')
    expect((await onVm(vm.name, 'sudo -n systemctl reset-failed bad; systemctl show -p ActiveState bad')).stdout).toBe(
      'ActiveState=inactive',
    )
    const collected = await onVm(
      vm.name,
      "sudo -n systemd-run --collect --unit=gone /bin/bash -c 'exit 7' >/dev/null; sleep 1; systemctl show -p LoadState,ActiveState gone",
    )
    expect(collected.stdout).toBe('LoadState=not-found\nActiveState=inactive')
    // A missing working directory fails the unit as systemd does (200/CHDIR).
    const chdir = await onVm(
      vm.name,
      'sudo -n systemd-run --unit=nodir -p WorkingDirectory=/nonexistent /bin/true >/dev/null; sleep 1; systemctl show -p Result,ExecMainStatus --value nodir',
    )
    expect(chdir.stdout).toBe('exit-code\n200')
  })
})

const billing = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

/** A local project directory: a script that writes outputs, a data file, and a link (never sent). */
function project(): string {
  const dir = tempDir('targon-project-')
  writeFileSync(
    join(dir, 'train.sh'),
    'echo "epochs=$EPOCHS note=$NOTE"; pwd; mkdir -p results/deep; echo model >results/model.txt; echo deep >results/deep/x.txt; printf "\\033[31mred\\n"; head -c 5000 /dev/zero | tr "\\0" a; echo; exit "${FAIL:-0}"\n',
  )
  mkdirSync(join(dir, 'data'))
  writeFileSync(join(dir, 'data', 'input.txt'), 'input\n')
  return dir
}

describe('targon run on an existing VM', () => {
  it('syncs, runs the job as a unit, streams its log, fetches --out, and reports the job as JSON', async () => {
    const vm = await rentBare('run')
    const dir = project()
    const result = await targon(
      [
        'run',
        vm.name,
        '--out',
        'results',
        '--out',
        './results/model.txt',
        '--env',
        'EPOCHS=3',
        '--env',
        "NOTE=it's here",
        '--json',
        '--',
        'bash',
        'train.sh',
      ],
      {cwd: dir},
    )
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    const {data} = doc
    const id: string = data.job.id
    expect(id).toMatch(/^j-\d{8}-\d{6}-[0-9a-f]{6}$/)
    expect(data).toMatchObject({
      exit_code: 0,
      job: {
        command: 'bash train.sh',
        down: false,
        exit_code: 0,
        state: 'succeeded',
        workdir: expect.stringMatching(/^\/home\/ubuntu\/targon\/work\/[0-9a-f]{16}$/),
      },
      sync: {files_sent: 2, local_dir: dir},
      vm: {name: vm.name, uid: vm.uid},
      deleted: null,
    })
    expect(data.sync.bytes_sent).toBeGreaterThan(0)
    const workdir: string = data.job.workdir
    // The log: --env values as given, the synced directory, control characters escaped, a long line cut at 4096.
    expect(data.tail.slice(0, 3)).toEqual(["epochs=3 note=it's here", workdir, '\\x1b[31mred'])
    expect(data.tail[3]).toBe(`${'a'.repeat(4096)}…`)
    // Outputs came home under ./targon-out/<job>/, keeping their paths.
    expect(data.fetch.destination).toBe(`targon-out/${id}/`)
    expect(readFileSync(join(dir, 'targon-out', id, 'results', 'deep', 'x.txt'), 'utf8')).toBe('deep\n')
    expect(readFileSync(join(dir, 'targon-out', id, 'results', 'model.txt'), 'utf8')).toBe('model\n')
    expect(data.fetch.failed).toEqual([])
    // On the VM: the tree synced, the job's files beside it (not in it), the unit gone.
    const simVm = simulated.farm.vm(vm.uid)
    expect(simVm.readFile(`${workdir}/data/input.txt`)).toBe('input\n')
    expect(simVm.readFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`)).toBe('0\n')
    expect(simVm.readFile(`/home/ubuntu/.targon/jobs/${id}/log`)).toContain('epochs=3')
    expect(simVm.calls().filter((call) => call.startsWith('systemd-run'))).toEqual([
      expect.stringContaining(`systemd-run --unit=targon-job-${id} --uid=ubuntu --collect -p WorkingDirectory=${workdir}`),
    ])

    // Text mode: the log on stdout as it comes, progress on stderr.
    const text = await targon(['run', vm.name, '--no-sync', '--', 'echo', 'hello;', 'echo', 'world'], {cwd: dir})
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toBe('hello\nworld\n')
    expect(text.stderr).toMatch(/Job j-\S+ started on /)

    // A second sync sends only what changed since the last one (the manifest on the VM says what is there).
    const same = await targon(['run', vm.name, '--json', '--', 'true'], {cwd: dir})
    expect(same.code, same.stderr).toBe(0)
    expect(parseJson(same).data.sync).toMatchObject({bytes_sent: 0, files_removed: 0, files_sent: 0})
    writeFileSync(join(dir, 'data', 'input.txt'), 'changed input\n')
    const changed = await targon(['run', vm.name, '--json', '--', 'true'], {cwd: dir})
    expect(changed.code, changed.stderr).toBe(0)
    expect(parseJson(changed).data.sync).toMatchObject({bytes_sent: 'changed input\n'.length, files_sent: 1})
    expect(simVm.readFile(`${workdir}/data/input.txt`)).toBe('changed input\n')
  })

  it('a failing job exits 12 with its exit code and tail, and its outputs still come home', async () => {
    const vm = await rentBare('fail')
    const dir = project()
    const result = await targon(['run', vm.name, '--out', 'results/model.txt', '--env', 'FAIL=3', '--json', '--', 'bash train.sh'], {
      cwd: dir,
    })
    expect(result.code).toBe(12)
    const doc = parseJson(result)
    expect(doc.error).toMatchObject({code: 'REMOTE_COMMAND_FAILED', exit_code: 12})
    expect(doc.error.message).toContain('exit code 3')
    expect(doc.data).toMatchObject({exit_code: 3, job: {exit_code: 3, state: 'failed'}})
    expect(readFileSync(join(dir, 'targon-out', doc.data.job.id, 'results', 'model.txt'), 'utf8')).toBe('model\n')
    // An --out path that is not there: the job succeeded, the fetch did not (12, COPY_FAILED).
    const missing = await targon(['run', vm.name, '--no-sync', '--out', 'nothing-here', '--json', '--', 'true'], {cwd: dir})
    expect(missing.code).toBe(12)
    expect(parseJson(missing).error.code).toBe('COPY_FAILED')
  })

  it('runs the job, with a warning, when the sync manifest cannot be written once the files are in place', async () => {
    const vm = await rentBare('nomanifest')
    // Where the manifests go is a file: the files are sent, the manifest's directory cannot be made.
    expect((await onVm(vm.name, 'mkdir -p ~/.targon && rm -rf ~/.targon/sync && echo taken > ~/.targon/sync')).code).toBe(0)
    const result = await targon(['run', vm.name, '--json', '--', 'cat data/input.txt'], {cwd: project()})
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const doc = parseJson(result)
    expect(doc.data).toMatchObject({exit_code: 0, sync: {files_sent: 2}, tail: ['input']})
    expect(doc.warnings).toEqual([expect.stringMatching(/^the sync of .* failed: .*; the next sync of .* sends its files again$/)])
  })

  it('a job that could not start leaves no job behind on the VM, nor a record of it here', async () => {
    const vm = await rentBare('nostart')
    expect((await onVm(vm.name, 'sudo -n rm /etc/sudoers.d/90-cloud-init-users')).code).toBe(0)
    const stored = () => (existsSync(join(configDir, 'jobs')) ? readdirSync(join(configDir, 'jobs')).sort() : [])
    const before = stored()
    const result = await targon(['run', vm.name, '--no-sync', '--json', '--', 'true'])
    expect(result.code, result.stdout + result.stderr).toBe(12)
    expect(parseJson(result).error.message).toContain('could not start the job')
    expect(jobsOn(vm.uid)).toEqual([])
    expect(stored()).toEqual(before)
    expect(parseJson(await targon(['jobs', '--vms', vm.name, '--json'])).data.jobs).toEqual([])
  })

  it('refuses bad input with one line before anything starts', async () => {
    const dir = project()
    const cases: [string[], number][] = [
      [['run', 'somevm', '--out', '/etc/passwd', '--', 'true'], 2],
      [['run', 'somevm', '--out', 'a/../../x', '--', 'true'], 2],
      [['run', 'somevm', '--out', '.', '--', 'true'], 2],
      [['run', 'somevm'], 2],
      [['run', 'somevm', '--', ' '], 2],
      [['run', '--', 'true'], 2],
      [['run', 'a', 'b', '--', 'true'], 2],
      [['run', 'somevm', '--env', '1X=2', '--', 'true'], 2],
      [['run', 'somevm', '--env', 'NOEQUALS', '--', 'true'], 2],
      [['run', 'somevm', '--workdir', join(dir, 'missing'), '--', 'true'], 4],
      [['run', 'nosuchvm', '--', 'true'], 2],
    ]
    for (const [args, code] of cases) {
      const result = await targon(args, {cwd: dir})
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(code)
      expect(errorLines(result.stderr)).toHaveLength(1)
    }
    expect(existsSync(join(dir, 'targon-out'))).toBe(false)
  })

  it('--down deletes the VM after the job, with its hook told job-done', async () => {
    const up = await targon([
      'up',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--fleet',
      'down',
      '--on-delete',
      'echo "reason=$TARGON_DELETE_REASON"',
      '--json',
    ])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]
    const dir = project()
    const result = await targon(['run', vm.name, '--down', '--out', 'results', '--json', '--', 'bash train.sh'], {cwd: dir})
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const {data} = parseJson(result)
    expect(data.deleted).toEqual([
      {action: 'deleted', billing: false, hook: {exit_code: 0, output_tail: 'reason=job-done', status: 'ok'}, name: vm.name, uid: vm.uid},
    ])
    expect(data.job).toMatchObject({down: true, state: 'succeeded'})
    expect(existsSync(join(dir, 'targon-out', data.job.id, 'results', 'model.txt'))).toBe(true)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it("--down ends, in text, with the deletion's result line, as down does", async () => {
    const vm = await rentBare('downline')
    const result = await targon(['run', vm.name, '--down', '--no-sync', '--', 'true'])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain(`deleted: ${vm.name} (${vm.uid})`)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('--down deletes the VM even when the job removed its own directory, so that no --out path can be read', async () => {
    const vm = await rentBare('gonedir')
    const dir = project()
    const result = await targon(
      ['run', vm.name, '--down', '--out', 'results', '--out', 'model.pt', '--json', '--', 'rm -rf "$(dirname "$PWD")"'],
      {
        cwd: dir,
      },
    )
    expect(result.code, result.stdout + result.stderr).toBe(12)
    const doc = parseJson(result)
    expect(doc.error.code).toBe('COPY_FAILED')
    expect(doc.data.job).toMatchObject({down: true, state: 'succeeded'})
    // Each path fails on its own, naming the directory that is gone.
    const gone = expect.stringMatching(/^the job's directory \/home\/ubuntu\/targon\/work\/\S+ is gone on the VM$/)
    expect(doc.data.fetch.failed).toEqual([
      {error: gone, path: 'results'},
      {error: gone, path: 'model.pt'},
    ])
    expect(doc.data.deleted).toEqual([expect.objectContaining({action: 'deleted', uid: vm.uid})])
    expect(billing().has(vm.uid)).toBe(false)
  })
})

/** The ids of the jobs started on a simulated VM (its job directories). */
function jobsOn(uid: string): string[] {
  const dir = join(simulated.farm.vm(uid).dir, 'upper', 'home/ubuntu/.targon/jobs')
  return existsSync(dir) ? readdirSync(dir) : []
}

describe("run never sends targon's secrets", () => {
  /** A home directory as targon finds it, with its config directory in it: config file, keys, ~/.ssh, secrets, one ordinary file. */
  function homeTree() {
    const home = tempDir('targon-home-tree-')
    const config = join(home, '.config', 'targon-fleet')
    writeConfigFile(config, {image: 'ubuntu-24-04-lts-595'})
    mkdirSync(join(home, '.ssh'), {mode: 0o700})
    writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n', {mode: 0o600})
    writeFileSync(join(home, '.env'), 'TOKEN=secret\n')
    writeFileSync(join(home, 'x.pem'), 'PEM\n')
    writeFileSync(join(home, 'notes.txt'), 'ordinary\n')
    // The CLI's start-up cache goes elsewhere: only what the test put there is in the tree.
    return {config, env: {HOME: home, XDG_CACHE_HOME: tempDir('targon-cache-')}, home}
  }

  /** The files of a directory on the VM, as the VM wrote them. */
  const filesOnVm = (uid: string, dir: string) =>
    Object.entries(tree(join(simulated.farm.vm(uid).dir, 'upper', dir)))
      .filter(([, what]) => what !== 'dir')
      .map(([path]) => path)
      .sort()

  it('from a home directory named with --workdir: only the ordinary file arrives, and a .env only when .targonignore lets it', async () => {
    const {config, env, home} = homeTree()
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'homerun', '--json'], {config, env})
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm = parseJson(up).data.vms[0]
    // The config directory holds the API's settings and the project key that the VM knows.
    expect(existsSync(join(config, 'keys', 'id_ed25519')) && existsSync(join(config, 'config.json'))).toBe(true)

    const run = await targon(['run', vm.name, '--workdir', home, '--json', '--', 'true'], {config, env})
    expect(run.code, run.stdout + run.stderr).toBe(0)
    const doc = parseJson(run)
    expect(filesOnVm(vm.uid, doc.data.job.workdir)).toEqual(['notes.txt'])
    expect(doc.data.sync).toMatchObject({files_sent: 1})
    expect(doc.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\.config\/targon-fleet: not synced: targon's config directory/),
        expect.stringMatching(/^\.ssh: not synced: ~\/\.ssh/),
        expect.stringMatching(/^\.env: not synced: looks like an environment file .*a \.targonignore line !\.env sends it$/),
        expect.stringMatching(/^x\.pem: not synced: looks like a private key/),
      ]),
    )

    // A .targonignore sends the .env on purpose; nothing it says sends the config directory, its keys or ~/.ssh.
    writeFileSync(join(home, '.targonignore'), '!.env\n!.config/\n!.config/targon-fleet/\n!.ssh/\n!id_*\n!keys/\n')
    const again = await targon(['run', vm.name, '--workdir', home, '--json', '--', 'true'], {config, env})
    expect(again.code, again.stdout + again.stderr).toBe(0)
    const workdir = parseJson(again).data.job.workdir
    expect(filesOnVm(vm.uid, workdir)).toEqual(['.env', '.targonignore', 'notes.txt'])
    expect(simulated.farm.vm(vm.uid).readFile(`${workdir}/.env`)).toBe('TOKEN=secret\n')
    expect(simulated.farm.vm(vm.uid).hasFile(`${workdir}/.config/targon-fleet/keys/id_ed25519`)).toBe(false)
    expect(simulated.farm.vm(vm.uid).hasFile(`${workdir}/.ssh/id_ed25519`)).toBe(false)
    expect((await targon(['down', vm.name, '--yes', '--json'], {config, env})).code).toBe(0)
  })

  it('refuses $HOME as the working directory unless --workdir names it, saying what it would send, before anything is asked or rented', async () => {
    const {config, env, home} = homeTree()
    const requests = simulated.sim.log.length
    const text = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--', 'true'], {config, cwd: home, env})
    expect(text.code).toBe(2)
    expect(errorLines(text.stderr)).toEqual([
      `Error: the working directory is your home directory ${home}: run would send 1 file (9B) to the VM. Hint: run from the project's directory, or name it with --workdir ${home} to send it`,
    ])
    const json = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--json', '--', 'true'], {config, cwd: home, env})
    expect(json.code).toBe(2)
    expect(parseJson(json).error).toMatchObject({code: 'USAGE', exit_code: 2})
    expect(simulated.sim.log.length).toBe(requests)
  })

  it('--dry-run lists what the sync would send and hold back, and why, renting and connecting to nothing', async () => {
    const {config, env, home} = homeTree()
    const requests = simulated.sim.log.length
    const args = ['run', 'rtx6000b-small', '--max-price', '1.8', '--dry-run', '--workdir', home]
    const json = await targon([...args, '--json', '--', 'python', 'train.py'], {config, env})
    expect(json.code, json.stdout + json.stderr).toBe(0)
    const {data} = parseJson(json)
    expect(data).toMatchObject({command: 'python train.py', dry_run: true, out: [], vm: 'rtx6000b-small'})
    expect(data.sync).toMatchObject({bytes: 9, files: [{bytes: 9, path: 'notes.txt'}], local_dir: home})
    expect(Object.fromEntries(data.sync.held_back.map((held: {path: string; kind: string}) => [held.path, held.kind]))).toEqual({
      '.config/targon-fleet': 'config-directory',
      '.env': 'looks-secret',
      '.ssh': 'ssh-directory',
      'x.pem': 'looks-secret',
    })
    const text = await targon([...args, '--', 'true'], {config, env})
    expect(text.code, text.stderr).toBe(0)
    const rows = text.stdout.trimEnd().split('\n')
    expect(rows[0]).toBe('SYNC\tPATH\tBYTES\tREASON')
    expect(rows).toContain('send\tnotes.txt\t9\t-')
    expect(rows).toContain(
      "hold\t.config/targon-fleet\t-\ttargon's config directory (the API key, the project key, the VM records): never sent",
    )
    expect(text.stderr).toContain('dry run: nothing was rented, connected to or sent')
    expect(simulated.sim.log.length).toBe(requests)
  })
})

describe('a running job and the limits of its VM', () => {
  it('keeps down --idle away (an older sampler is updated first), but not --ttl', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'limits', '--idle', '3s', '--ttl', '1h', '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]
    const sampler = '/usr/local/lib/targon-fleet/idle-sampler.py'
    // The sampler of an earlier version, which knows nothing of jobs.
    const older = await onVm(
      vm.name,
      `sudo sed -i 's/^VERSION = ".*"$/VERSION = "2"/' ${sampler} && sudo systemctl restart targon-fleet-idle`,
    )
    expect(older.code).toBe(0)

    let child: ChildProcess | undefined
    const running = targon(['run', vm.name, '--no-sync', '--', 'sleep 120'], {onSpawn: (spawned) => (child = spawned)})
    await waitFor(() => jobsOn(vm.uid).length === 1, 60_000)
    const [id] = jobsOn(vm.uid)
    expect(simulated.farm.vm(vm.uid).readFile(sampler)).toContain(`VERSION = "${SAMPLER_VERSION}"`)
    // The run ends (as a closed laptop would end it): its SSH session goes, the job stays.
    child?.kill('SIGKILL')
    await running
    // Past its idle limit (3 s), and sampled since the job started: on a loaded machine the sampler may lag behind.
    await new Promise((resolve) => setTimeout(resolve, 6000))
    const clock = () => {
      try {
        return simulated.farm.vm(vm.uid).readFile('/var/lib/targon-fleet/idle.json')
      } catch {
        return ''
      }
    }
    await waitFor(() => clock().includes(`job ${id}`), 30_000)
    const idle = await targon(['down', '--idle', '--json'])
    expect(idle.code, idle.stdout + idle.stderr).toBe(0)
    const kept = parseJson(idle).data.kept as {uid: string; reason: string; state: string}[]
    expect(kept.find((each) => each.uid === vm.uid)).toMatchObject({reason: `busy: job ${id}`, state: 'busy'})
    expect(billing().has(vm.uid)).toBe(true)

    // Its TTL runs out: the job does not keep it.
    const record = join(configDir, 'vms', 'acme', `${vm.name}.json`)
    writeFileSync(
      record,
      JSON.stringify({...JSON.parse(readFileSync(record, 'utf8')), ttl_expires_at: new Date(Date.now() - 60_000).toISOString()}),
    )
    const expired = await targon(['down', '--expired', '--json'])
    expect(expired.code, expired.stdout + expired.stderr).toBe(0)
    // Its result names the job the deletion ended.
    expect(parseJson(expired).data.results).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, ended_jobs: [{command: 'sleep 120', id}], uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
  })
})

describe('targon jobs', () => {
  it('lists, shows, waits for, fetches and cancels jobs; an interrupted run leaves its job running, or with --down deletes its VM', async () => {
    const vm = await rentBare('jobs')
    const dir = project()
    // A job that waits for a file the test makes, then writes its output.
    const gated = 'echo waiting; while [ ! -e go ]; do sleep 0.2; done; echo finished; mkdir -p out; echo result >out/r.txt'
    let child: ChildProcess | undefined
    const interrupted = targon(['run', vm.name, '--out', 'out', '--json', '--', gated], {cwd: dir, onSpawn: (spawned) => (child = spawned)})
    await waitFor(
      () => jobsOn(vm.uid).length === 1 && simulated.farm.vm(vm.uid).readFile(`/home/ubuntu/.targon/jobs/${jobsOn(vm.uid)[0]}/log`) !== '',
      60_000,
    )
    const [id] = jobsOn(vm.uid) as [string]
    child?.kill('SIGINT')
    const stopped = await interrupted
    expect(stopped.code).toBe(130)
    const stoppedDoc = parseJson(stopped)
    expect(stoppedDoc.error.message).toContain(`job ${id} still runs`)
    expect(stoppedDoc.error.hint).toContain(`targon jobs wait ${id}`)
    expect(stoppedDoc.data.job).toMatchObject({id, state: 'running'})

    const listed = await targon(['jobs', '--vms', vm.name, '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    expect(parseJson(listed).data).toEqual({
      jobs: [
        expect.objectContaining({
          command: gated,
          down: false,
          down_pending: false,
          exit_code: null,
          id,
          state: 'running',
          vm: {name: vm.name, uid: vm.uid},
        }),
      ],
      unreadable: [],
    })
    const logs = await targon(['jobs', 'logs', id, '--vms', vm.name])
    expect(logs.code, logs.stderr).toBe(0)
    expect(logs.stdout).toBe('waiting\n')

    // jobs wait picks it up: follows to the end, fetches --out, exits as run would.
    const waiting = targon(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd: dir})
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const workdir: string = stoppedDoc.data.job.workdir
    expect((await onVm(vm.name, `touch ${workdir}/go`)).code).toBe(0)
    const waited = await waiting
    expect(waited.code, waited.stdout + waited.stderr).toBe(0)
    expect(parseJson(waited).data).toMatchObject({exit_code: 0, job: {id, state: 'succeeded'}, tail: ['waiting', 'finished']})
    expect(readFileSync(join(dir, 'targon-out', id, 'out', 'r.txt'), 'utf8')).toBe('result\n')
    // And again, for the outputs alone.
    const fetched = await targon(['jobs', 'fetch', id, '--vms', vm.name, '--json'], {cwd: tempDir('targon-elsewhere-')})
    expect(fetched.code, fetched.stderr).toBe(0)
    expect(parseJson(fetched).data.fetch).toMatchObject({copied: ['out/r.txt'], destination: `targon-out/${id}/`})

    // A job cancelled: its unit stopped, its log kept; listed as cancelled; a second cancel changes nothing.
    const sleeper = targon(['run', vm.name, '--no-sync', '--', 'echo started; sleep 300'], {cwd: dir})
    await waitFor(() => jobsOn(vm.uid).length === 2, 60_000)
    const other = jobsOn(vm.uid).find((each) => each !== id) as string
    await waitFor(() => simulated.farm.vm(vm.uid).readFile(`/home/ubuntu/.targon/jobs/${other}/log`) !== '', 30_000)
    const cancel = await targon(['jobs', 'cancel', other, '--vms', vm.name, '--json'])
    expect(cancel.code, cancel.stderr).toBe(0)
    expect(parseJson(cancel).data).toMatchObject({cancelled: true, job: {id: other, state: 'cancelled'}})
    const ended = await sleeper
    expect(ended.code).toBe(12)
    expect(ended.stderr).toContain('it was cancelled')
    expect((await onVm(vm.name, 'pgrep -x sleep || echo none')).stdout).toBe('none')
    const again = await targon(['jobs', 'cancel', other, '--vms', vm.name, '--json'])
    expect(parseJson(again).data).toMatchObject({cancelled: false, job: {state: 'cancelled'}})
    expect((await targon(['jobs', 'logs', other, '--vms', vm.name])).stdout).toBe('started\n')

    // Interrupted with --down: the job is cancelled, its outputs fetched, and its VM deleted.
    const doomed = await rentBare('doomed')
    let downChild: ChildProcess | undefined
    const withDown = targon(
      ['run', doomed.name, '--down', '--out', 'out', '--json', '--', 'mkdir -p out; echo partial >out/p.txt; echo up; sleep 300'],
      {
        cwd: dir,
        onSpawn: (spawned) => (downChild = spawned),
      },
    )
    await waitFor(
      () =>
        jobsOn(doomed.uid).length === 1 &&
        simulated.farm.vm(doomed.uid).readFile(`/home/ubuntu/.targon/jobs/${jobsOn(doomed.uid)[0]}/log`) !== '',
      60_000,
    )
    downChild?.kill('SIGINT')
    const downed = await withDown
    expect(downed.code, downed.stdout + downed.stderr).toBe(130)
    const downedDoc = parseJson(downed)
    expect(downedDoc.error.message).toMatch(/cancelled, .* deleted$/)
    expect(downedDoc.data).toMatchObject({deleted: [{action: 'deleted', billing: false, uid: doomed.uid}], job: {state: 'cancelled'}})
    expect(readFileSync(join(dir, 'targon-out', downedDoc.data.job.id, 'out', 'p.txt'), 'utf8')).toBe('partial\n')
    expect(billing().has(doomed.uid)).toBe(false)

    // A failed job, in the text table.
    expect((await targon(['run', vm.name, '--no-sync', '--', 'exit 3'])).code).toBe(12)
    const table = await targon(['jobs', '--vms', vm.name])
    expect(table.code, table.stderr).toBe(0)
    const rows = table.stdout.trimEnd().split('\n')
    expect(rows[0]).toBe('ID\tVM\tSTATE\tSTARTED\tDURATION\tDOWN\tCOMMAND')
    expect(rows.map((row) => row.split('\t')[2])).toEqual(['STATE', 'succeeded', 'cancelled', 'failed (3)'])

    // Ids that no VM has, or that no job can have.
    for (const bad of ['j-20990101-000000-abcdef', '../etc']) {
      const missing = await targon(['jobs', 'logs', bad, '--vms', vm.name])
      expect(missing.code, missing.stderr).toBe(4)
      expect(errorLines(missing.stderr)).toHaveLength(1)
    }
  })
})

describe('run --detach', () => {
  it('returns once the job has started; with --down, down --jobs-done deletes the VM once it has ended, outputs first', async () => {
    const vm = await rentBare('detached')
    const dir = project()
    const started = await targon(
      [
        'run',
        vm.name,
        '--detach',
        '--down',
        '--out',
        'out',
        '--json',
        '--',
        'while [ ! -e go ]; do sleep 0.2; done; mkdir -p out; echo r >out/r.txt',
      ],
      {cwd: dir},
    )
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const doc = parseJson(started)
    const id: string = doc.data.job.id
    expect(doc.data).toMatchObject({exit_code: null, job: {down: true, id, state: 'running'}, tail: []})
    expect(doc.warnings.join('\n')).toContain('no guard covers this config directory')

    // While it runs, the VM is kept, and listed with --down pending.
    const early = await targon(['down', '--jobs-done', '--fleet', 'detached', '--json'])
    expect(early.code, early.stdout + early.stderr).toBe(0)
    expect(parseJson(early).data).toMatchObject({kept: [{reason: `busy: job ${id}`, state: 'busy', uid: vm.uid}], results: []})
    expect(parseJson(await targon(['jobs', '--vms', vm.name, '--json'])).data.jobs).toEqual([
      expect.objectContaining({down_pending: true, id}),
    ])
    expect(billing().has(vm.uid)).toBe(true)

    expect((await onVm(vm.name, `touch ${doc.data.job.workdir}/go`)).code).toBe(0)
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    const done = await targon(['down', '--jobs-done', '--fleet', 'detached', '--json'])
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid: vm.uid})])
    expect(billing().has(vm.uid)).toBe(false)
    // Its outputs were kept in the config directory's job store before the deletion.
    expect(readFileSync(join(configDir, 'jobs', id, 'out', 'out', 'r.txt'), 'utf8')).toBe('r\n')
    // From there, jobs fetch copies them once the VM is gone.
    const elsewhere = tempDir('targon-fetch-')
    const fetched = await targon(['jobs', 'fetch', id, '--json'], {cwd: elsewhere})
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0)
    expect(parseJson(fetched).data).toMatchObject({fetch: {copied: ['out/r.txt']}, job: {id, state: 'succeeded'}, vm: {uid: vm.uid}})
    expect(readFileSync(join(elsewhere, 'targon-out', id, 'out', 'r.txt'), 'utf8')).toBe('r\n')

    const refused = await targon(['down', '--jobs-done', vm.name])
    expect(refused.code).toBe(2)
  })

  it('with --down from a config directory that holds no record of the VM, says that no sweep from there deletes it', async () => {
    const vm = await rentBare('norecord')
    const other = tempDir('targon-config-')
    cpSync(join(configDir, 'keys'), join(other, 'keys'), {recursive: true})
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'true'], {
      env: {TARGON_CONFIG_DIR: other},
    })
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    expect(parseJson(started).warnings.join('\n')).toContain(`holds no record of ${vm.name}: no sweep from it deletes the VM`)
    expect(parseJson(started).warnings.join('\n')).toContain(`targon jobs wait ${id}`)
  })

  it('a sweep deletes the VM of a detached --down job started from its directory once the job has ended', async () => {
    const vm = await rentBare('swept')
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'sleep 8'])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    const early = await targon(['sweep', '--fleet', 'swept', '--json'])
    expect(early.code, early.stdout + early.stderr).toBe(0)
    expect(parseJson(early).data.kept).toEqual([expect.objectContaining({reason: `busy: job ${id}`, uid: vm.uid})])
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    const swept = await targon(['sweep', '--fleet', 'swept', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results, swept.stdout).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
  })
  it('a sweep from another config directory finds the --down job on the VM when its idle probe reads it', async () => {
    const vm = await rentBare('elsewhere')
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'sleep 1'])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    // The guard's directory holds the project key and the host pins, but no record of the VM or its job.
    const guardDir = tempDir('targon-guard-')
    for (const held of ['keys', 'known_hosts.d', 'config.json'])
      if (existsSync(join(configDir, held))) cpSync(join(configDir, held), join(guardDir, held), {recursive: true})
    const env = {TARGON_CONFIG_DIR: guardDir}
    // Without an idle limit nothing probes the VM, so nothing here knows of its job.
    const unprobed = await targon(['sweep', '--fleet', 'elsewhere', '--json'], {env})
    expect(unprobed.code, unprobed.stdout + unprobed.stderr).toBe(0)
    expect(parseJson(unprobed).data.results).toEqual([])
    const swept = await targon(['sweep', '--fleet', 'elsewhere', '--idle-limit', '1h', '--json'], {env})
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
    expect(existsSync(join(guardDir, 'jobs', id, 'job.json'))).toBe(true)
  })
})

describe('run --down whose follow ends early', () => {
  it('a sweep deletes the VM once the job has ended, when the run itself was killed while following', async () => {
    const vm = await rentBare('orphaned')
    const killed = await targon(['run', vm.name, '--down', '--no-sync', '--json', '--', 'sleep 3'], {
      onSpawn: signalWhen(() => jobsOn(vm.uid).length > 0, 'SIGKILL', 500),
    })
    expect(killed.code, killed.stdout + killed.stderr).not.toBe(0)
    const [id] = jobsOn(vm.uid)
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    expect(billing().has(vm.uid)).toBe(true)
    const swept = await targon(['sweep', '--fleet', 'orphaned', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('an interrupt while the outputs come home still deletes the VM, as --down asked', async () => {
    const vm = await rentBare('fetchint')
    const dir = tempDir('targon-project-')
    const make = 'mkdir -p big && for i in 1 2 3 4; do head -c 50M /dev/zero >big/$i; done'
    const result = await targon(['run', vm.name, '--down', '--no-sync', '--out', 'big', '--json', '--', make], {
      cwd: dir,
      onSpawn: signalWhen(() => existsSync(join(dir, 'targon-out'))),
    })
    expect(result.code, result.stdout + result.stderr).toBe(130)
    const doc = parseJson(result)
    expect(doc.data.job).toMatchObject({down: true, state: 'succeeded'})
    expect(doc.data.deleted).toEqual([expect.objectContaining({action: 'deleted', uid: vm.uid})])
    expect(billing().has(vm.uid)).toBe(false)
  })
})

describe('a deletion names the jobs it ends', () => {
  it('down NAME names the running job (a dry run too), in its result, its event and its line; an unreachable VM is deleted all the same', async () => {
    const vm = await rentBare('ended')
    // A command with a control character: the VM's text is escaped on the terminal, exact in JSON.
    const command = "sleep 300; echo '\u001b[2J'"
    const started = await targon(['run', vm.name, '--detach', '--no-sync', '--json', '--', command])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    const job = {command: parseJson(started).data.job.command as string, id}
    expect(job.command).toBe(command)

    const dry = await targon(['down', vm.name, '--dry-run', '--json'])
    expect(dry.code, dry.stdout + dry.stderr).toBe(0)
    expect(parseJson(dry).data.results).toEqual([{action: 'would-delete', billing: true, ended_jobs: [job], name: vm.name, uid: vm.uid}])

    const eventsFile = join(tempDir('targon-events-'), 'events.ndjson')
    const down = await targon(['down', vm.name, '--json', '--verbose', '--events-file', eventsFile])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(parseJson(down).data.results).toEqual([{action: 'deleted', billing: false, ended_jobs: [job], name: vm.name, uid: vm.uid}])
    expect(down.stderr).toContain(`deleted: ${vm.name} (${vm.uid}); ended job ${id} (sleep 300; echo '\\x1b[2J')`)
    const done = parseEvents(readFileSync(eventsFile, 'utf8')).filter((event) => event.type === 'deletion' && event.status === 'done')
    expect(done).toEqual([expect.objectContaining({ended_jobs: [job], vm: {index: null, name: vm.name, uid: vm.uid}})])
    expect(done[0]?.detail).toContain(`ended job ${id}`)
    expect(billing().has(vm.uid)).toBe(false)

    // A VM whose sshd is gone: its jobs cannot be read, which is said, and it is deleted all the same.
    const lost = await rentBare('ended')
    const other = await targon(['run', lost.name, '--detach', '--no-sync', '--json', '--', 'sleep 300'])
    expect(other.code, other.stdout + other.stderr).toBe(0)
    await simulated.farm.stopVm(lost.uid)
    const unreachable = await targon(['down', lost.name, '--json'])
    expect(unreachable.code, unreachable.stdout + unreachable.stderr).toBe(0)
    expect(parseJson(unreachable).data.results).toEqual([
      {action: 'deleted', billing: false, ended_jobs: null, name: lost.name, uid: lost.uid},
    ])
    expect(parseJson(unreachable).warnings.join('\n')).toContain(`the jobs of 1 VM could not be read (${lost.name}:`)
    expect(billing().has(lost.uid)).toBe(false)
  })
})

describe('the job store of down --jobs-done and the sweep', () => {
  const hook = useWebhook()
  const storeDir = tempDir('targon-config-store-')
  const inStore = (args: string[], options: CliOptions = {}) =>
    targon(args, {...options, env: {TARGON_CONFIG_DIR: storeDir, TARGON_NOTIFY_URL: hook.url, ...options.env}})
  const received = () => hook.received.filter((each) => each.body?.targon?.event === 'fetch-failing')

  /** A detached --down job on a new VM of `fleet` (`extra`: up's limits), ended: its id and the VM. */
  async function endedJob(fleet: string, extra: string[], out: string, command: string) {
    const up = await inStore(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, ...extra, '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]
    const started = await inStore(['run', vm.name, '--detach', '--down', '--no-sync', '--out', out, '--json', '--', command])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    return {id, vm}
  }

  it('stops a fetch at the bound: the VM is kept and billing, the failure notified once, and fetched whole once the bound allows', async () => {
    expect((await inStore(['config', 'set', 'job-store-limit', '2M'])).code).toBe(0)
    const {id, vm} = await endedJob(
      'bound',
      ['--ttl', '2h'],
      'out',
      'mkdir -p out; for i in 1 2 3; do head -c 1048576 /dev/urandom >out/f$i; done',
    )
    const out = join(storeDir, 'jobs', id, 'out', 'out')

    const first = await inStore(['down', '--jobs-done', '--fleet', 'bound', '--json'])
    expect(first.code, first.stdout + first.stderr).toBe(0)
    const doc = parseJson(first)
    expect(doc.data.results).toEqual([])
    expect(doc.data.kept).toEqual([expect.objectContaining({state: 'unreadable', uid: vm.uid})])
    expect(doc.data.kept[0].reason).toContain('the fetch stopped at its bound of 2M, the job-store-limit setting')
    // To paste as it is: the store's config directory and the VM's fleet.
    expect(doc.data.kept[0].reason).toContain(`fetch by hand: TARGON_CONFIG_DIR=${storeDir} targon jobs fetch ${id} --fleet bound`)
    expect(doc.warnings.join('\n')).toContain('their --ttl, --max-cost and idle limits still apply')
    expect(billing().has(vm.uid)).toBe(true)
    // What came is kept, whole; nothing past the bound was written, and the job is not in the store as fetched.
    expect(readdirSync(out).sort()).toEqual(['f1', 'f2'])
    expect(readFileSync(join(out, 'f2'))).toHaveLength(1048576)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)
    const notices = received()
    expect(notices).toHaveLength(1)
    expect(notices[0]?.body.targon).toMatchObject({event: 'fetch-failing', exit_code: 0, vms: [{name: vm.name, uid: vm.uid}]})
    expect(notices[0]?.body.text).toContain(`the outputs of job ${id} on ${vm.name} could not be fetched`)
    expect(notices[0]?.body.text).toContain('its TTL')
    expect(notices[0]?.body.text).toContain(`targon down ${vm.name}`)

    // The next sweep keeps it again, without a second notification.
    const again = await inStore(['sweep', '--fleet', 'bound', '--json'])
    expect(again.code, again.stdout + again.stderr).toBe(0)
    expect(parseJson(again).data.kept[0].reason).toContain('2 times in a row')
    expect(received()).toHaveLength(1)
    expect(billing().has(vm.uid)).toBe(true)

    // With room, the next one fetches it whole and deletes the VM.
    expect((await inStore(['config', 'set', 'job-store-limit', '10M'])).code).toBe(0)
    const done = await inStore(['down', '--jobs-done', '--fleet', 'bound', '--json'])
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid: vm.uid})])
    expect(readdirSync(out).sort()).toEqual(['f1', 'f2', 'f3'])
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(true)
    expect(existsSync(join(storeDir, 'jobs', id, 'failing.json'))).toBe(false)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('jobs wait on a --down job stores the outputs first: a fetch past the bound keeps the VM; once they come, ./targon-out has them and the VM goes', async () => {
    expect((await inStore(['config', 'set', 'job-store-limit', '2M'])).code).toBe(0)
    const {id, vm} = await endedJob(
      'waited',
      ['--ttl', '2h'],
      'out',
      'mkdir -p out; for i in 1 2 3; do head -c 1048576 /dev/urandom >out/f$i; done',
    )
    const cwd = tempDir('targon-wait-')
    const notified = received().length

    const kept = await inStore(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd})
    expect(kept.code, kept.stdout + kept.stderr).toBe(12)
    const keptDoc = parseJson(kept)
    expect(keptDoc.error.code).toBe('COPY_FAILED')
    expect(keptDoc.error.hint).toContain('the outputs stay on the VM')
    expect(keptDoc.data).toMatchObject({deleted: null, exit_code: 0, job: {id, state: 'succeeded'}})
    expect(keptDoc.warnings.join('\n')).toContain(`${vm.name} is kept and bills`)
    expect(received().length).toBe(notified + 1)
    expect(billing().has(vm.uid)).toBe(true)
    expect(existsSync(join(cwd, 'targon-out'))).toBe(false)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)

    expect((await inStore(['config', 'set', 'job-store-limit', '10M'])).code).toBe(0)
    const done = await inStore(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd})
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data).toMatchObject({deleted: [{action: 'deleted', billing: false, uid: vm.uid}], exit_code: 0})
    expect(readdirSync(join(cwd, 'targon-out', id, 'out')).sort()).toEqual(['f1', 'f2', 'f3'])
    expect(readFileSync(join(cwd, 'targon-out', id, 'out', 'f3'))).toEqual(readFileSync(join(storeDir, 'jobs', id, 'out', 'out', 'f3')))
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(true)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('deletes a VM under no limit whose fetch has failed 3 times over a day, without its outputs, and says so', async () => {
    const {id, vm} = await endedJob('nolimit', [], 'missing', 'true')
    const kept = await inStore(['sweep', '--fleet', 'nolimit', '--json'])
    expect(kept.code, kept.stdout + kept.stderr).toBe(0)
    expect(parseJson(kept).data.kept[0].reason).toContain('--out missing was not fetched')
    const notice = received().find((each) => each.body.text.includes(id))
    expect(notice?.body.text).toContain('it has no TTL, budget or idle limit')
    expect(billing().has(vm.uid)).toBe(true)

    // As if its fetch had failed since two days: the next failure is the third, and the VM goes.
    const failing = join(storeDir, 'jobs', id, 'failing.json')
    const record = JSON.parse(readFileSync(failing, 'utf8'))
    writeFileSync(failing, JSON.stringify({...record, failures: 2, first_failed_at: new Date(Date.now() - 2 * 86_400_000).toISOString()}))
    const swept = await inStore(['sweep', '--fleet', 'nolimit', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    const doc = parseJson(swept)
    expect(doc.data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid})])
    expect(doc.warnings.join('\n')).toContain(`deleting ${vm.name} without the outputs of job ${id}: their fetch failed 3 times`)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)
    expect(billing().has(vm.uid)).toBe(false)
  })
})

describe('run renting its VM', () => {
  it('rents when the word names an offer (idle limit 30m), runs, fetches, deletes with --down: nothing left billing', async () => {
    const dir = project()
    const before = billing()
    const result = await targon(
      ['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--down', '--out', 'results', '--json', '--', 'bash train.sh'],
      {cwd: dir},
    )
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const {data} = parseJson(result)
    expect(data).toMatchObject({deleted: [{action: 'deleted', billing: false}], exit_code: 0, job: {state: 'succeeded'}})
    expect(readFileSync(join(dir, 'targon-out', data.job.id, 'results', 'model.txt'), 'utf8')).toBe('model\n')
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])

    // Detached, without --down: the rented VM stays, with the idle limit run gives it.
    const detached = await targon([
      'run',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--fleet',
      'rented',
      '--detach',
      '--no-sync',
      '--json',
      '--',
      'true',
    ])
    expect(detached.code, detached.stdout + detached.stderr).toBe(0)
    const vm = parseJson(detached).data.vm as {name: string; uid: string}
    const record = JSON.parse(readFileSync(join(configDir, 'vms', 'acme', `${vm.name}.json`), 'utf8'))
    expect(record.idle_limit_s).toBe(1800)
    expect((await targon(['down', vm.name, '--json'])).code).toBe(0)

    // Ctrl-C while it rents: what it rented is deleted again.
    const known = new Set(simulated.sim.workloads.keys())
    const interrupted = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: signalWhen(() => [...simulated.sim.workloads.keys()].some((uid) => !known.has(uid))),
    })
    expect(interrupted.code, interrupted.stdout + interrupted.stderr).toBe(130)
    await waitFor(() => [...billing()].every((uid) => before.has(uid)), 30_000)

    // A VM labelled as an offer is named: the word names both, and run refuses before it rents or starts anything.
    const named = await targon([
      'up',
      'rtx6000b-small',
      '--name',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--no-bootstrap',
      '--fleet',
      'twin',
      '--json',
    ])
    expect(named.code, named.stdout + named.stderr).toBe(0)
    const twin = parseJson(named).data.vms[0] as {name: string; uid: string}
    const rentable = billing()
    const ambiguous = await targon(['run', 'rtx6000b-small', '--fleet', 'twin', '--max-price', '1.8', '--', 'true'])
    expect(ambiguous.code, ambiguous.stderr).toBe(2)
    expect(errorLines(ambiguous.stderr)).toEqual([expect.stringContaining(`rtx6000b-small names both the VM ${twin.name} and an offer`)])
    expect(ambiguous.stderr).toContain(`targon run ${twin.uid}`)
    expect(billing()).toEqual(rentable)
    expect(jobsOn(twin.uid)).toEqual([])
    // Without a price cap nothing can be rented: the word is the VM's.
    const onTwin = await targon(['run', 'rtx6000b-small', '--fleet', 'twin', '--no-sync', '--json', '--', 'true'])
    expect(onTwin.code, onTwin.stdout + onTwin.stderr).toBe(0)
    expect(parseJson(onTwin).data.vm).toEqual({name: twin.name, uid: twin.uid})
    expect((await targon(['down', twin.uid, '--json'])).code).toBe(0)

    // A word that names neither a VM nor an offer: refused, nothing rented.
    const neither = await targon(['run', 'nosuchthing', '--max-price', '1.8', '--', 'true'])
    expect(neither.code, neither.stderr).toBe(2)
    expect(errorLines(neither.stderr)).toHaveLength(1)
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])
  })

  it('deletes what it rented when the new VM cannot be looked up: interrupted there, or hidden from the listing', async () => {
    const before = billing()
    const listings = () => simulated.sim.log.filter((entry) => entry.method === 'GET' && /\/workloads$/.test(entry.path)).length
    /** Once the VM being rented runs (up bootstraps it, reading no listing), `onRunning` is called once. */
    const whenRunning = (onRunning: () => void) => {
      const known = new Set(simulated.sim.workloads.keys())
      const timer = setInterval(() => {
        if (![...simulated.sim.workloads.values()].some((each) => !known.has(each.uid) && each.status === 'running')) return
        clearInterval(timer)
        onRunning()
      }, 20)
      return timer
    }

    // Ctrl-C while run looks up the VM that up has just rented: that listing is held until the interrupt has come.
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const interrupted = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: (child) => {
        let seen = Number.POSITIVE_INFINITY
        const timer = whenRunning(() => {
          seen = listings()
          simulated.sim.inject({holdUntil: held, method: 'GET', path: /\/workloads$/, times: 1})
        })
        const asked = setInterval(() => {
          if (listings() <= seen) return
          clearInterval(asked)
          child.kill('SIGINT')
          setTimeout(release, 500)
        }, 20)
        child.on('close', () => {
          clearInterval(timer)
          clearInterval(asked)
          release()
        })
      },
    })
    expect(interrupted.code, interrupted.stdout + interrupted.stderr).toBe(130)
    expect(parseJson(interrupted).data.deleted).toEqual([expect.objectContaining({action: 'deleted', billing: false})])
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])

    // The first listing after the rent does not show the new VM yet: the run fails, and deletes it all the same.
    const hidden = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: (child) => {
        const timer = whenRunning(() =>
          simulated.sim.inject({
            body: JSON.stringify({items: [], next_cursor: null}),
            method: 'GET',
            path: /\/workloads$/,
            status: 200,
            times: 1,
          }),
        )
        child.on('close', () => clearInterval(timer))
      },
    })
    expect(hidden.code, hidden.stdout + hidden.stderr).not.toBe(0)
    expect(parseJson(hidden).data.deleted).toEqual([expect.objectContaining({action: 'deleted', billing: false})])
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])
  })
})
