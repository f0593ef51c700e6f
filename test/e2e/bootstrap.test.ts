/**
 * `up` against simulated VMs that are real SSH hosts (needs root, which CI has; these tests
 * fail rather than skip when it is missing).
 */
import {execFile} from 'node:child_process'
import {type AddressInfo, connect, createServer} from 'node:net'
import {promisify} from 'node:util'
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'
import {parse as parseYaml} from 'yaml'

import {BOOTSTRAP_STEPS} from '../../src/lib/adapters/events/schema.js'
import {parseJson, tempDir} from '../helpers/cli.js'
import {expectOneRunInOrder, parseEvents} from '../helpers/events.js'
import {targonFor} from '../helpers/fixture.js'
import {startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'
import {VmFarm, type VmScenario} from '../vm/farm.js'
import {LATENCY_MODEL} from '../vm/latency.js'

let sim: TargonSimulator
let farm: VmFarm
let scenario: VmScenario = {}
let configDir: string
const targon = targonFor(() => ({configDir, sim}), {
  inProcess: true,
  env: {TARGON_PULL_RETRY_DELAY: '0.2', TARGON_SHIM_HEALTH_TIMEOUT: '4'},
})

beforeAll(async () => {
  sim = await startSimulator({answerDeployOnceBooted: true, bootDelayMs: 200})
  farm = new VmFarm(sim, () => scenario)
})

afterEach(async () => {
  // Each test starts from an empty account.
  for (const workload of sim.live()) sim.deleteExternally(workload.uid)
  await farm.stopAll()
  scenario = {}
})

afterAll(async () => {
  await farm?.stopAll()
  await sim?.stop()
})

async function up(...extra: string[]) {
  const result = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', ...extra])
  return {doc: parseJson(result), result}
}

const installs = (calls: string[]) => calls.filter((call) => call.startsWith('apt-get install'))
const updates = (calls: string[]) => calls.filter((call) => call.startsWith('apt-get update'))

describe('up with bootstrap on simulated VMs', () => {
  it('installs everything on a fresh VM once, starts a healthy shim, and pins the host key', async () => {
    configDir = tempDir('targon-config-')
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    const vm = doc.data.vms[0]
    expect(vm.phases.map((phase: {name: string; status: string}) => `${phase.name}:${phase.status}`)).toEqual([
      'register:done',
      'deploy:done',
      'wait-running:done',
      'install:done',
      'shim-start:done',
    ])
    expect(vm.bootstrap).toEqual({
      docker_version: '28.2.2',
      driver_version: '595.45.04',
      gpus: {count: 1, name: 'NVIDIA RTX PRO 6000 Blackwell Server Edition'},
      gpu_check: 'container',
      nvidia_ctk_version: '1.17.8',
      script_version: '2026.12.3',
    })
    expect(vm.dstack).toEqual({dstack_sign: null, healthy: true, managed_by: 'targon', shim_version: '0.21.2'})

    const simVm = farm.vm(vm.uid)
    const calls = simVm.calls()
    // One apt transaction of each kind: both repositories are added first, every package goes in one install.
    expect(updates(calls)).toHaveLength(1)
    expect(installs(calls)).toHaveLength(1)
    expect(installs(calls)[0]).toContain(' docker-ce ')
    expect(installs(calls)[0]).toContain('nvidia-container-toolkit')
    expect(calls.indexOf(updates(calls)[0] as string)).toBeGreaterThan(
      calls.findLastIndex((call) => call.startsWith('curl') && /gpg|gpgkey|\.list/.test(call)),
    )
    expect(simVm.readFile('/etc/apt/sources.list.d/docker.list')).toContain('https://download.docker.com/linux/ubuntu noble stable')
    expect(simVm.readFile('/etc/apt/sources.list.d/nvidia-container-toolkit.list')).toContain('signed-by=')
    expect(calls.filter((call) => call === 'systemctl restart docker')).toHaveLength(1)
    expect(calls.filter((call) => call.startsWith('curl') && call.includes('dstack-shim-linux-amd64'))).toHaveLength(1)
    expect(calls.some((call) => call.includes('ufw'))).toBe(false)

    // Files on the VM: marker, daemon.json, the shim unit exactly as dstack writes it.
    const marker = JSON.parse(simVm.readFile('/var/lib/targon-dstack/bootstrap.json'))
    expect(marker).toMatchObject({
      gpu_check: 'container',
      gpu_test: 'passed',
      schema: 1,
      script_version: '2026.12.3',
      shim: {version: '0.21.2'},
    })
    expect(JSON.parse(simVm.readFile('/etc/docker/daemon.json'))).toEqual({
      'exec-opts': ['native.cgroupdriver=cgroupfs'],
      runtimes: {nvidia: {args: [], path: 'nvidia-container-runtime'}},
    })
    expect(simVm.readFile('/etc/systemd/system/dstack-shim.service')).toContain(
      'EnvironmentFile=/root/.dstack/shim.env\nExecStart=/usr/local/bin/dstack-shim\n',
    )
    expect(simVm.readFile('/root/.dstack/shim.env')).toContain(
      'DSTACK_RUNNER_DOWNLOAD_URL="https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/0.21.2/binaries/dstack-runner-linux-amd64"',
    )

    // The host key is pinned in our own known_hosts file; ~/.ssh is never touched.
    const pin = readFileSync(join(configDir, 'known_hosts.d', vm.uid), 'utf8')
    expect(pin).toMatch(new RegExp(`^targon-${vm.uid},\\[127\\.0\\.0\\.1\\]:${vm.ssh_port} ssh-ed25519 `))
    expect(vm.host_key_fingerprint).toMatch(/^SHA256:/)
    const status = parseJson(await targon(['status', '--json']))
    expect(status.data.vms[0].bootstrapped).toBe(true)

    // The dstack bridge: an SSH fleet file with dstack's field names.
    const fleetFile = await targon(['status', '--dstack-fleet'])
    expect(fleetFile.code).toBe(0)
    expect(parseYaml(fleetFile.stdout)).toEqual({
      name: 'targon-default',
      ssh_config: {
        hosts: [{hostname: '127.0.0.1', port: vm.ssh_port}],
        identity_file: join(configDir, 'keys', 'id_ed25519'),
        user: 'ubuntu',
      },
      type: 'fleet',
    })

    // A repeat adopts the VM: confirmed by the check phase (no detached run, no install call), the shim is left
    // running as it is, and the marker is not rewritten.
    const markerText = simVm.readFile('/var/lib/targon-dstack/bootstrap.json')
    const again = await up('--name', vm.name)
    expect(again.result.code, again.result.stdout).toBe(0)
    expect(again.doc.data.vms[0]).toMatchObject({adopted: true, bootstrap: vm.bootstrap, dstack: vm.dstack, uid: vm.uid})
    const newCalls = simVm.calls().slice(calls.length)
    expect(installs(newCalls)).toEqual([])
    expect(updates(newCalls)).toEqual([])
    expect(newCalls.filter((call) => /^(curl|systemd-run|systemctl (restart|stop))/.test(call))).toEqual([])
    expect(simVm.readFile('/var/lib/targon-dstack/bootstrap.json')).toBe(markerText)

    // On a bootstrapped VM the shim phase runs in the check's own remote call; a new shim version is still
    // downloaded, started and checked for health, without a detached install run.
    const callsBeforeUpgrade = simVm.calls().length
    const upgraded = await up('--name', vm.name, '--dstack-version', '0.21.3')
    expect(upgraded.result.code, upgraded.result.stdout).toBe(0)
    expect(upgraded.doc.data.vms[0].dstack).toEqual({dstack_sign: null, healthy: true, managed_by: 'targon', shim_version: '0.21.3'})
    const upgradeCalls = simVm.calls().slice(callsBeforeUpgrade)
    expect(upgradeCalls.filter((call) => call.startsWith('curl') && call.includes('0.21.3'))).toHaveLength(1)
    expect(upgradeCalls.filter((call) => call.startsWith('systemd-run'))).toEqual([])
    const back = await up('--name', vm.name, '--dstack-version', '0.21.2')
    expect(back.result.code).toBe(0)
    expect(back.doc.data.vms[0].dstack.shim_version).toBe('0.21.2')

    // --reinstall ignores the marker: a full detached run, which finds every step in place.
    const callsBefore = simVm.calls().length
    const forced = await up('--name', vm.name, '--reinstall')
    expect(forced.result.code, forced.result.stdout).toBe(0)
    const forcedCalls = simVm.calls().slice(callsBefore)
    expect(forcedCalls.filter((call) => call.startsWith('systemd-run'))).toHaveLength(1)
    expect(installs(forcedCalls)).toEqual([])
    expect(updates(forcedCalls)).toEqual([])
    expect(sim.requests('POST', /\/workloads$/)).toHaveLength(1)

    // targon ssh passes the remote exit code through, and --print pastes into a shell.
    expect((await targon(['ssh', vm.name, '--', 'exit 3'])).code).toBe(3)
    const printed = (await targon(['ssh', vm.name, '--print'])).stdout.trim()
    // Asynchronously: the VM's port is served by this very process.
    expect((await promisify(execFile)('bash', ['-c', `${printed} cat /etc/hostname`])).stdout.trim()).toBe(`vm-${vm.uid}`)
    expect(
      existsSync(join(process.env.HOME ?? '/root', '.ssh', 'known_hosts')) &&
        readFileSync(join(process.env.HOME ?? '/root', '.ssh', 'known_hosts'), 'utf8').includes(vm.uid),
    ).toBe(false)

    // down removes the pin.
    expect((await targon(['down', vm.name])).code).toBe(0)
    expect(existsSync(join(configDir, 'known_hosts.d', vm.uid))).toBe(false)
  })

  // A partly installed VM: one update and one install, of the missing packages only, from only their repository.
  it.each([
    {missing: 'nvidia-container-toolkit', present: 'docker-ce', presentRepo: 'download.docker.com', vm: {dockerPreinstalled: true}},
    {missing: 'docker-ce', present: 'nvidia-container-toolkit', presentRepo: 'nvidia.github.io', vm: {toolkitPreinstalled: true}},
  ])('completes a partial install: $present already there, $missing missing', async ({missing, present, presentRepo, vm}) => {
    configDir = tempDir('targon-config-')
    scenario = vm
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    const calls = farm.vm(doc.data.vms[0].uid).calls()
    expect(updates(calls)).toHaveLength(1)
    expect(installs(calls)).toHaveLength(1)
    expect(installs(calls)[0]?.split(' ')).toContain(missing)
    expect(installs(calls)[0]?.split(' ')).not.toContain(present)
    expect(calls.filter((call) => call.includes(presentRepo))).toEqual([])
  })

  it('downloads the shim binary while apt works, and the shim phase uses that download', async () => {
    configDir = tempDir('targon-config-')
    scenario = {shimDownloadSeconds: 2}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data.vms[0].dstack).toEqual({dstack_sign: null, healthy: true, managed_by: 'targon', shim_version: '0.21.2'})
    const vm = farm.vm(doc.data.vms[0].uid)
    const timed = vm.timedCalls()
    const at = (event: 'end' | 'start', test: (call: string) => boolean) =>
      timed.find((entry) => entry.event === event && test(entry.call))?.at
    const isShim = (call: string) => call.startsWith('curl') && call.includes('dstack-shim-linux-amd64')
    const shimStart = at('start', isShim) as number
    const shimEnd = at('end', isShim) as number
    const updateStart = at('start', (call) => call.startsWith('apt-get update')) as number
    const installStart = at('start', (call) => call.startsWith('apt-get install')) as number
    const installEnd = at('end', (call) => call.startsWith('apt-get install')) as number
    // The download started before apt and was still running while apt worked.
    expect(shimStart).toBeLessThan(updateStart)
    expect(shimEnd).toBeGreaterThan(installStart)
    expect(shimEnd - shimStart).toBeGreaterThanOrEqual(2000)
    expect(installEnd).toBeLessThan(shimEnd)
    // One download in all: the shim phase took the background one.
    expect(vm.calls().filter(isShim)).toHaveLength(1)
    expect(vm.hasFile('/var/lib/targon-dstack/downloads/dstack-shim-0.21.2-amd64')).toBe(false)
  })

  it('retries a rate-limited pull of the smoke test image with backoff, then runs the container check', async () => {
    configDir = tempDir('targon-config-')
    scenario = {pullRateLimited: 2}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data.vms[0].bootstrap.gpu_check).toBe('container')
    const vm = farm.vm(doc.data.vms[0].uid)
    const pulls = vm.timedCalls().filter((entry) => entry.event === 'start' && entry.call.startsWith('docker pull'))
    expect(pulls).toHaveLength(3)
    // Backoff: 0.2 s, then 0.4 s.
    expect((pulls[1]?.at as number) - (pulls[0]?.at as number)).toBeGreaterThanOrEqual(200)
    expect((pulls[2]?.at as number) - (pulls[1]?.at as number)).toBeGreaterThanOrEqual(400)
    expect(vm.calls().filter((call) => call.startsWith('docker run'))).toHaveLength(1)
    expect(JSON.parse(vm.readFile('/var/lib/targon-dstack/bootstrap.json')).gpu_check).toBe('container')
  })

  it('falls back to the runtime-level GPU check when Docker Hub keeps refusing the pull, and reports it', async () => {
    configDir = tempDir('targon-config-')
    scenario = {pullRateLimited: 'always'}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data.vms[0].bootstrap.gpu_check).toBe('runtime')
    expect(doc.data.vms[0].dstack.healthy).toBe(true)
    const vm = farm.vm(doc.data.vms[0].uid)
    const calls = vm.calls()
    expect(calls.filter((call) => call.startsWith('docker pull'))).toHaveLength(4)
    expect(calls.filter((call) => call.startsWith('docker run'))).toEqual([])
    expect(calls).toContain('nvidia-container-cli info')
    expect(JSON.parse(vm.readFile('/var/lib/targon-dstack/bootstrap.json'))).toMatchObject({gpu_check: 'runtime', gpu_test: 'passed'})
    expect(vm.readFile('/var/log/targon-dstack-bootstrap.log')).toContain('toomanyrequests')
  })

  it('a GPU that containers cannot use still exits 8 after the fallback check, and deletes the VM', async () => {
    configDir = tempDir('targon-config-')
    scenario = {containerGpuFailure: true, pullRateLimited: 'always'}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(8)
    expect(doc.error.code).toBe('BOOTSTRAP_FAILED')
    expect(doc.error.message).toContain('B8')
    expect(sim.live()).toEqual([])
  })

  it('with the latency model on, the doubles take the modelled time (sleeping, scaled down here)', async () => {
    configDir = tempDir('targon-config-')
    const scale = 0.05
    scenario = {latency: true, latencyScale: scale}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    const timed = farm.vm(doc.data.vms[0].uid).timedCalls()
    const took = (test: (call: string) => boolean) => {
      const start = timed.find((entry) => entry.event === 'start' && test(entry.call))?.at as number
      return (timed.find((entry) => entry.event === 'end' && entry.at >= start && test(entry.call))?.at as number) - start
    }
    const model = LATENCY_MODEL
    const ms = (seconds: number) => seconds * scale * 1000
    // One update with both third-party repositories configured; one install of Docker and the toolkit.
    expect(took((call) => call.startsWith('apt-get update'))).toBeGreaterThanOrEqual(
      ms(model.aptUpdateSeconds + 2 * model.aptUpdatePerRepositorySeconds),
    )
    expect(took((call) => call.startsWith('apt-get install'))).toBeGreaterThanOrEqual(
      ms(model.aptInstallSeconds + model.aptInstallDockerSeconds + model.aptInstallToolkitSeconds),
    )
    expect(took((call) => call.includes('dstack-shim-linux'))).toBeGreaterThanOrEqual(ms(model.shimDownloadSeconds))
    expect(took((call) => call.startsWith('docker pull'))).toBeGreaterThanOrEqual(ms(model.imagePullSeconds))
    expect(took((call) => call === 'systemctl restart docker')).toBeGreaterThanOrEqual(ms(model.dockerRestartSeconds))
  })

  it('enables passwordless sudo once with the stored VM password where sudo asks for it', async () => {
    configDir = tempDir('targon-config-')
    scenario = {sudoPassword: true}
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    const vm = farm.vm(doc.data.vms[0].uid)
    expect(vm.readFile('/etc/sudoers.d/90-targon-dstack')).toBe('ubuntu ALL=(ALL) NOPASSWD:ALL\n')
    expect(result.stdout).not.toContain(sim.workloads.get(doc.data.vms[0].uid)?.password)
  })

  it('makes sudo quiet for dstack: a hostname that does not resolve goes into /etc/hosts, and the step says so', async () => {
    configDir = tempDir('targon-config-')
    scenario = {hostnameUnresolved: true}
    const {doc, result} = await up()
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const vm = doc.data.vms[0]
    const steps = vm.phases.flatMap((phase: {steps: {id: string; status: string; detail: string}[]}) => phase.steps)
    expect(steps.find((step: {id: string}) => step.id === 'quiet-sudo')).toMatchObject({
      detail: `added vm-${vm.uid} to /etc/hosts`,
      status: 'done',
    })
    expect(farm.vm(vm.uid).readFile('/etc/hosts')).toContain(`127.0.1.1 vm-${vm.uid}\n`)
    // What dstack runs on takeover must print nothing at all.
    const sudo = await targon(['exec', '--vms', vm.uid, '--json', '--', 'sudo -n true'])
    expect(parseJson(sudo).data.results).toMatchObject([{exit_code: 0, tail: []}])
    // A repeat finds it quiet.
    const again = await up('--name', vm.name, '--reinstall')
    expect(again.result.code, again.result.stdout).toBe(0)
    const stepsAgain = again.doc.data.vms[0].phases.flatMap((phase: {steps: {id: string}[]}) => phase.steps)
    expect(stepsAgain.find((step: {id: string}) => step.id === 'quiet-sudo')).toMatchObject({detail: 'already-quiet', status: 'skipped'})
  })

  it('a repeat bootstrap never restarts Docker while a dstack task is at work: the host is reported busy', async () => {
    configDir = tempDir('targon-config-')
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    const vm = farm.vm(doc.data.vms[0].uid)
    vm.setTasks([{id: 'run-1-0', status: 'running'}])
    // Docker's settings drift (another tool rewrote daemon.json): applying them again needs a restart.
    const drift = await targon(['exec', '--vms', vm.uid, '--', `echo '{"runtimes": {}}' | sudo tee /etc/docker/daemon.json >/dev/null`])
    expect(drift.code, drift.stderr).toBe(0)
    const before = vm.calls().length
    const busy = await up('--name', doc.data.vms[0].name, '--reinstall')
    expect(busy.result.code, busy.result.stdout).toBe(8)
    expect(busy.doc.error.message).toContain(
      "the host is busy with dstack, and Docker was left as it is: Docker needs a restart to apply its settings, but dstack's shim has tasks at work: run-1-0 running",
    )
    expect(busy.doc.error.hint).toContain('again once')
    expect(
      vm
        .calls()
        .slice(before)
        .filter((call) => call.includes('restart docker')),
    ).toEqual([])
    expect(vm.readFile('/etc/docker/daemon.json')).toBe('{"runtimes": {}}\n')
    // Adopted, not created by this run: it keeps billing.
    expect(sim.billing().map((workload) => workload.uid)).toEqual([vm.uid])
    // Once the task has ended, the same repeat restarts Docker with the settings it needs.
    vm.setTasks([{id: 'run-1-0', status: 'terminated'}])
    const after = await up('--name', doc.data.vms[0].name, '--reinstall')
    expect(after.result.code, after.result.stdout).toBe(0)
    expect(
      vm
        .calls()
        .slice(before)
        .filter((call) => call === 'systemctl restart docker'),
    ).toHaveLength(1)
  })

  it('waits for a slow sshd and out a held dpkg lock', async () => {
    configDir = tempDir('targon-config-')
    scenario = {dpkgLockSeconds: 3, sshdDelaySeconds: 2}
    const started = Date.now()
    const {doc, result} = await up()
    expect(result.code, result.stdout).toBe(0)
    expect(doc.data.vms[0].dstack.healthy).toBe(true)
    expect(Date.now() - started).toBeGreaterThan(3000)
  })

  it('the plain progress shows each phase of the VM and each remote step, then the fast path as already done', async () => {
    configDir = tempDir('targon-config-')
    const first = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'shown'])
    expect(first.code, first.stderr).toBe(0)
    for (const line of ['register', 'deploy', 'wait-running', 'marker check', 'Docker service', 'health check'])
      expect(first.stderr).toContain(line)
    expect(first.stderr).toMatch(/NVIDIA Container Toolkit \(\d+\.\d s\)/)
    const again = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'shown'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toContain('register: already done')
    expect((await targon(['down', 'shown'])).code).toBe(0)
  })

  it('a failing install step exits 8, shows the log tail, and deletes the VM', async () => {
    configDir = tempDir('targon-config-')
    scenario = {failPackage: 'nvidia-container-toolkit'}
    const human = await targon(['up', 'rtx6000b-small', '--max-price', '1.8'])
    expect(human.code).toBe(8)
    expect(human.stderr).toContain('install step apt-install (B4) failed')
    expect(human.stderr).toContain('Unable to locate package nvidia-container-toolkit')
    expect(sim.live()).toEqual([])
  })

  it('an unhealthy shim exits 8 and deletes the VM', async () => {
    configDir = tempDir('targon-config-')
    scenario = {shimUnhealthy: true}
    const {doc, result} = await up()
    expect(result.code).toBe(8)
    expect(doc.error.message).toContain('dstack-shim is not healthy')
    expect(sim.live()).toEqual([])
  })

  it('a changed host key refuses to connect with exit 7', async () => {
    configDir = tempDir('targon-config-')
    const first = await up('--name', 'pinned')
    expect(first.result.code, first.result.stdout).toBe(0)
    await farm.vm(first.doc.data.vms[0].uid).rotateHostKey()
    const second = await up('--name', 'pinned')
    expect(second.result.code).toBe(7)
    expect(second.doc.error.code).toBe('HOST_KEY_MISMATCH')
    expect(second.doc.error.message).toContain(first.doc.data.vms[0].host_key_fingerprint)
    // The adopted VM was not created by that run, so the default policy keeps it.
    expect(sim.live()).toHaveLength(1)
    await targon(['down', '--all'])
  })

  it('up --count 2 ends with two healthy shims and two different pinned host keys; --events ndjson tells each step', async () => {
    configDir = tempDir('targon-config-')
    const {doc, result} = await up('--count', '2', '--events', 'ndjson')
    expect(result.code, result.stdout).toBe(0)
    // stderr carries events only, in causal order per VM, and they tell what the JSON result records.
    const events = parseEvents(result.stderr)
    expectOneRunInOrder(events)
    expect(events.at(-1)).toMatchObject({status: 'done', type: 'run'})
    for (const vm of doc.data.vms as {uid: string; name: string; phases: {name: string; status: string; steps: {id: string}[]}[]}[]) {
      const own = events.filter((event) => event.vm?.uid === vm.uid)
      for (const phase of vm.phases) {
        expect(own.find((event) => event.type === 'phase' && event.phase === phase.name && event.status === phase.status)).toBeDefined()
        for (const step of phase.steps)
          expect(own.some((event) => event.type === 'step' && event.step === step.id && event.status !== 'started')).toBe(true)
      }
      expect(own.find((event) => event.phase === 'shim-start' && event.type === 'phase' && event.status === 'done')?.vm?.name).toBe(vm.name)
      // Steps by their stable names, the same in the events and in up --json; each started once, with its title.
      const started = own.filter((event) => event.type === 'step' && event.status === 'started')
      const names = started.map((event) => event.step)
      expect(new Set(names).size).toBe(names.length)
      expect(names).toEqual(expect.arrayContaining(['marker-check', 'apt-install', 'gpu-test', 'shim-binary', 'shim-health']))
      expect(started.find((event) => event.step === 'marker-check')?.detail).toBe('marker check')
      expect(started.find((event) => event.step === 'shim-health')?.detail).toBe('health check')
      expect(vm.phases.flatMap((phase) => phase.steps.map((step) => step.id))).toEqual(
        BOOTSTRAP_STEPS.filter((name) => own.some((event) => event.step === name && event.status !== 'started')),
      )
    }
    expect(new Set(events.map((event) => event.event_version))).toEqual(new Set([2]))
    const vms = doc.data.vms as {uid: string; dstack: {healthy: boolean}; host_key_fingerprint: string}[]
    expect(vms.map((vm) => vm.dstack.healthy)).toEqual([true, true])
    expect(new Set(vms.map((vm) => vm.host_key_fingerprint)).size).toBe(2)
    for (const vm of vms) expect(existsSync(join(configDir, 'known_hosts.d', vm.uid))).toBe(true)
    expect((await targon(['down', '--all'])).code).toBe(0)
    expect(sim.live()).toEqual([])
  })
})

// Last: its deleted VM stays listed as a tombstone, which an earlier test's status would see.
describe('up on a VM whose address moves when it starts running', () => {
  it('follows the address the state gives once running when it differs from the one the bootstrap used early', async () => {
    configDir = tempDir('targon-config-')
    // A second port on this machine that leads to the same VM: the state gives it only once the VM runs.
    let target = 0
    const forwarder = createServer((socket) => {
      const upstream = connect(target, '127.0.0.1')
      socket.pipe(upstream).pipe(socket)
      socket.on('error', () => upstream.destroy())
      upstream.on('error', () => socket.destroy())
    })
    await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve))
    const movedPort = (forwarder.address() as AddressInfo).port
    // SSH answers at once, the state says running after 5 s: the bootstrap starts on the early address.
    scenario = {latency: {addressSeconds: 0, runningSeconds: 100, sshAnswersSeconds: 0}, latencyScale: 0.05}
    sim.options.runningEndpoint = (_workload, booted) => {
      target = booted.ssh_port
      return {public_ip: booted.public_ip, ssh_port: movedPort}
    }
    try {
      const {doc, result} = await up()
      expect(result.code, result.stdout + result.stderr).toBe(0)
      const vm = doc.data.vms[0]
      expect(vm.ssh_port).toBe(movedPort)
      expect(doc.warnings).toEqual(expect.arrayContaining([expect.stringContaining(`to 127.0.0.1:${movedPort} when it started running`)]))
      const ssh = await targon(['ssh', vm.name, '--', 'echo', 'reached'])
      expect(ssh.code, ssh.stderr).toBe(0)
      expect(ssh.stdout.trim()).toBe('reached')
    } finally {
      sim.options.runningEndpoint = undefined
      forwarder.close()
    }

    const down = await targon(['down', '--all', '--yes', '--json'])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(sim.billing()).toEqual([])
  })
})
