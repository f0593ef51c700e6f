/**
 * Simulated Targon VMs: each is a real OpenSSH sshd in its own mount, network, PID and UTS
 * namespaces (see vm-init.sh), reachable from the host at 127.0.0.1:<port>. The farm plugs
 * into the simulator: a deployed workload gets a VM, which boots while the workload is provisioning;
 * a deleted one loses it.
 * Needs root (namespaces, overlay mounts) and the tools of scripts/prerequisites.sh; the tests check both
 * once, before they start (test/helpers/prerequisites.ts).
 */
import {type ChildProcess, execFile, spawn} from 'node:child_process'
import {chmodSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {type Server, type Socket, connect, createServer} from 'node:net'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import type {SimWorkload, TargonSimulator, VmEndpoint} from '../simulator/simulator.js'
import {type LatencyModel, deployTiming, latencyEnv} from './latency.js'

const INIT = fileURLToPath(new URL('vm-init.sh', import.meta.url))
const DOUBLES = fileURLToPath(new URL('doubles', import.meta.url))
const execFileAsync = promisify(execFile)

export interface VmScenario {
  /** sshd starts this long after the VM has booted (by default, with the latency model: as its row says, after deploy). */
  sshdDelaySeconds?: number
  dockerPreinstalled?: boolean
  toolkitPreinstalled?: boolean
  /** Another process holds the dpkg lock this long after boot. */
  dpkgLockSeconds?: number
  /** apt-get install of this package fails. */
  failPackage?: string
  /** Downloading the dstack-shim binary takes this long. */
  shimDownloadSeconds?: number
  /** Pulls from Docker Hub meet its rate limit (toomanyrequests): this many times, or always. */
  pullRateLimited?: number | 'always'
  /** Containers cannot use the GPUs (the NVIDIA container runtime fails), although the driver works on the host. */
  containerGpuFailure?: boolean
  /** The latency model (latency.ts): true for its defaults, or some entries changed; off when absent. */
  latency?: true | Partial<LatencyModel>
  /** Multiplies every duration of the latency model (e.g. 0.05 for a quick test). */
  latencyScale?: number
  /** The shim starts but never answers its health check. */
  shimUnhealthy?: boolean
  gpuCount?: number
  /** The VM does not accept the workload's SSH key. */
  rejectKey?: boolean
  /** sudo asks ubuntu for the workload's vm_config.password (instead of passwordless sudo). */
  sudoPassword?: boolean
  /**
   * The VM's hostname is not in /etc/hosts, so sudo warns "unable to resolve host" on every call; with
   * 'hosts-read-only', /etc/hosts cannot be written either.
   */
  hostnameUnresolved?: boolean | 'hosts-read-only'
}

export class SimVm {
  private readonly sockets = new Set<Socket>()
  /** TCP connections made to the VM's SSH port (including attempts before sshd listens). */
  connections = 0
  /** When sshd answered a connection (sent its banner), epoch ms: attempts before it listens get no answer. */
  readonly sshAnswers: number[] = []

  constructor(
    readonly uid: string,
    readonly dir: string,
    private readonly process: ChildProcess,
    private readonly server: Server,
  ) {}

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  track(socket: Socket): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
  }

  /** What the doubles recorded, one call per line: "apt-get install -y ... docker-ce". */
  calls(): string[] {
    return this.readFile('/var/log/sim-doubles/calls.log').split('\n').filter(Boolean)
  }

  /** The same calls with when each started and ended (epoch ms on the VM's clock, which is the host's). */
  timedCalls(): {at: number; event: 'end' | 'start'; call: string}[] {
    return this.readFile('/var/log/sim-doubles/calls.log.timed')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [at, event, ...call] = line.split(' ')
        return {at: Number(at), call: call.join(' '), event: event as 'end' | 'start'}
      })
  }

  /** A file the VM wrote, read from its overlay (e.g. /var/lib/targon-dstack/bootstrap.json). */
  readFile(vmPath: string): string {
    const path = join(this.dir, 'upper', vmPath)
    return existsSync(path) ? readFileSync(path, 'utf8') : ''
  }

  /** Authenticated SSH connections, as sshd logged them. */
  sshSessions(): number {
    const log = join(this.dir, 'sshd.log')
    return existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((line) => line.includes('Accepted publickey')).length
      : 0
  }

  hasFile(vmPath: string): boolean {
    return existsSync(join(this.dir, 'upper', vmPath))
  }

  /** The next connections see a different host key. */
  async rotateHostKey(): Promise<void> {
    rmSync(join(this.dir, 'ssh_host_ed25519_key'), {force: true})
    rmSync(join(this.dir, 'ssh_host_ed25519_key.pub'), {force: true})
    await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(this.dir, 'ssh_host_ed25519_key')])
    // The VM's init reads requests from this FIFO; the write returns once it has opened it.
    await writeFile(join(this.dir, 'control'), 'rotate-host-key\n')
    await sleep(300)
  }

  /** The GPUs' utilisation from now on, in percent (what the nvidia-smi double reports). */
  setGpuUtil(percent: number): void {
    writeFileSync(join(this.dir, 'gpu-util'), `${percent}\n`)
  }

  /**
   * The dstack tasks the shim double lists from now on, in the shape of dstack-shim 0.19.26 and later
   * ({"tasks": [{"id", "status"}]}), or in that of earlier shims ({"ids": [...]}, each task then read on its own).
   */
  setTasks(tasks: {id: string; status: string}[], shape: 'ids' | 'tasks' = 'tasks'): void {
    writeFileSync(join(this.dir, 'tasks.json'), JSON.stringify(tasks))
    writeFileSync(join(this.dir, 'tasks-shape'), `${shape}\n`)
  }

  /** What the shim double answers to GET /api/tasks from now on, whatever it is (a hostile or broken shim). */
  setTaskListAnswer(body: string): void {
    writeFileSync(join(this.dir, 'tasks-answer'), body)
  }

  /** The containers `docker ps` lists from now on. */
  setContainers(names: string[]): void {
    writeFileSync(join(this.dir, 'containers'), names.map((name) => `${name}\n`).join(''))
  }

  /** Skews the VM's clock, as the idle sampler reads it, by this many seconds (the VM shares the host's clock). */
  setClockOffset(seconds: number): void {
    writeFileSync(join(this.dir, 'clock-offset'), `${seconds}\n`)
  }

  /** A reboot: services stop and the enabled ones start again, and SSH sessions end. */
  async reboot(): Promise<void> {
    this.dropConnections()
    await writeFile(join(this.dir, 'control'), 'reboot\n')
    await sleep(500)
  }

  /** Cuts every open SSH connection, as a network drop would. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy()
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
    if (this.process.exitCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve))
      this.process.kill('SIGKILL')
      await exited
    }

    rmSync(this.dir, {force: true, recursive: true})
  }
}

export class VmFarm {
  readonly vms = new Map<string, SimVm>()
  /** VMs still booting: stopAll waits for them, or a boot that ends after it would outlive the test. */
  private readonly booting = new Set<Promise<VmEndpoint>>()

  constructor(
    private readonly sim: TargonSimulator,
    private readonly scenarioFor: (workload: SimWorkload) => VmScenario = () => ({}),
  ) {
    sim.options.onBoot = (workload) => {
      const boot = this.start(workload)
      this.booting.add(boot)
      void boot.finally(() => this.booting.delete(boot)).catch(() => {})
      return boot
    }
    sim.options.onDeleted = (workload) => this.stopVm(workload.uid)
    // The deploy rows of a scenario's latency model (the farm's sshd delay plays the SSH row).
    sim.options.deployTiming ??= (workload) => {
      const scenario = scenarioFor(workload)
      return deployTiming(scenario.latency, scenario.latencyScale)
    }
  }

  vm(uid: string): SimVm {
    const vm = this.vms.get(uid)
    if (!vm) throw new Error(`no simulated VM for ${uid}`)
    return vm
  }

  async start(workload: SimWorkload): Promise<VmEndpoint> {
    const dir = mkdtempSync(join(tmpdir(), `targon-vm-${workload.uid}-`))
    // Inside the VM this is /run/vm: its services (the idle sampler as targon-idle, probes as ubuntu) read the files
    // a test sets there (gpu-util, tasks.json, clock-offset) by name; the rest stays private by its own mode.
    chmodSync(dir, 0o711)
    await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'ssh_host_ed25519_key')])
    const scenario = this.scenarioFor(workload)
    const sshAnswersMs = deployTiming(scenario.latency, scenario.latencyScale)?.sshAnswersMs
    const sshdDelaySeconds =
      scenario.sshdDelaySeconds ??
      (sshAnswersMs === undefined ? 0 : Math.max(0, sshAnswersMs - (Date.now() - (workload.deployedAt ?? 0))) / 1000)
    const keys = scenario.rejectKey ? [] : workload.ssh_keys.map((uid) => this.sim.sshKeys.get(uid)?.public_key_raw).filter(Boolean)
    writeFileSync(join(dir, 'authorized_keys'), `${keys.join('\n')}\n`)
    writeFileSync(
      join(dir, 'scenario.env'),
      [
        `VM_HOSTNAME=vm-${workload.uid}`,
        `SIM_SSHD_DELAY_SECONDS=${sshdDelaySeconds}`,
        `SIM_DOCKER_PREINSTALLED=${scenario.dockerPreinstalled ? 1 : 0}`,
        `SIM_TOOLKIT_PREINSTALLED=${scenario.toolkitPreinstalled ? 1 : 0}`,
        `SIM_DPKG_LOCK_SECONDS=${scenario.dpkgLockSeconds ?? 0}`,
        `SIM_FAIL_PACKAGE=${scenario.failPackage ?? ''}`,
        `SIM_SHIM_UNHEALTHY=${scenario.shimUnhealthy ? 1 : 0}`,
        `SIM_SHIM_DOWNLOAD_SECONDS=${scenario.shimDownloadSeconds ?? 0}`,
        `SIM_PULL_FAILURES=${scenario.pullRateLimited === 'always' ? 1_000_000 : (scenario.pullRateLimited ?? 0)}`,
        `SIM_CONTAINER_GPU_FAILURE=${scenario.containerGpuFailure ? 1 : 0}`,
        ...latencyEnv(scenario.latency, scenario.latencyScale),
        `SIM_GPU_COUNT=${scenario.gpuCount ?? 1}`,
        `SIM_SUDO_PASSWORD=${scenario.sudoPassword ? workload.password : ''}`,
        `SIM_HOSTNAME_UNRESOLVED=${scenario.hostnameUnresolved === 'hosts-read-only' ? 'read-only' : scenario.hostnameUnresolved ? 1 : 0}`,
        '',
      ].join('\n'),
    )
    const log = openSync(join(dir, 'init.log'), 'a')
    const child = spawn(
      'unshare',
      ['--mount', '--net', '--pid', '--uts', '--fork', '--mount-proc', '--kill-child', 'bash', INIT, dir, DOUBLES],
      // Not the tests' TMPDIR (npm test's directory of the run): inside, /tmp is the VM's own.
      {env: {...process.env, TMPDIR: undefined}, stdio: ['ignore', log, log]},
    )
    const socketPath = join(dir, 'ssh.sock')
    for (let waited = 0; !existsSync(socketPath); waited += 50) {
      if (child.exitCode !== null || waited > 20_000) {
        child.kill('SIGKILL')
        throw new Error(`simulated VM ${workload.uid} did not boot:\n${readFileSync(join(dir, 'init.log'), 'utf8')}`)
      }
      await sleep(50)
    }

    const holder: {vm?: SimVm} = {}
    // No Nagle on the relay (nor on socat's leg, vm-init.sh): a real sshd is reached without a relay that holds back
    // small packets, and the 40 ms waits it added were most of a second sync's time.
    const server = createServer({noDelay: true}, (socket) => {
      if (holder.vm) holder.vm.connections++
      holder.vm?.track(socket)
      const upstream = connect(socketPath)
      holder.vm?.track(upstream)
      upstream.once('data', () => holder.vm?.sshAnswers.push(Date.now()))
      socket.pipe(upstream).pipe(socket)
      socket.on('error', () => upstream.destroy())
      upstream.on('error', () => socket.destroy())
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const vm = new SimVm(workload.uid, dir, child, server)
    holder.vm = vm
    this.vms.set(workload.uid, vm)
    return {public_ip: '127.0.0.1', ssh_port: vm.port}
  }

  async stopVm(uid: string): Promise<void> {
    const vm = this.vms.get(uid)
    this.vms.delete(uid)
    await vm?.stop()
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.booting])
    await Promise.all([...this.vms.keys()].map((uid) => this.stopVm(uid)))
  }
}
