/**
 * `targon run` on simulated VMs that are real SSH hosts (needs root, like exec.test.ts); first, the VMs' systemd-run
 * and systemctl doubles, which play the transient units that jobs run as. `targon jobs`, and the jobs of run --detach
 * and --down: jobs.test.ts.
 */
import type {ChildProcess} from 'node:child_process'
import {existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {errorLines, parseJson, tempDir, waitFor, writeConfigFile} from '../helpers/cli.js'
import {tree} from '../helpers/files.js'
import IDLE_SAMPLER from '../../src/lib/adapters/bootstrap/idle-sampler.py'
import {project, useJobVms} from './job-vms.js'

const {billing, configDir, jobsOn, onVm, rentBare, simulated, targon} = useJobVms()
/** The version of the sampler this CLI installs. */
const SAMPLER_VERSION = /^VERSION = "(.*)"$/m.exec(IDLE_SAMPLER)?.[1]

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
