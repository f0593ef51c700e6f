/**
 * Idle VMs on simulated VMs (real sshd): the sampler the bootstrap installs keeps each VM's idle clock, status --usage
 * shows it, and down --idle from cron deletes only what is really idle. Each scenario ends with nothing billing that
 * should not, and nothing deleted that was busy. The scenarios share one set of booted VMs, with second-scale limits
 * and a one-second sampling interval.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {renameSync} from 'node:fs'
import {createServer} from 'node:http'
import {join} from 'node:path'
import {type AddressInfo, type Socket, connect} from 'node:net'
import {setTimeout as sleep} from 'node:timers/promises'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, baseEnv, parseJson, tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {unusedPort} from '../helpers/ports.js'
import {cleanSample, idlePast, sampleWhere} from '../helpers/idle-clock.js'
import {simulatorEnv} from '../helpers/simulator.js'

const ENV = {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}
// As processes: the VMs' idle clocks count SSH sessions, and a run in process returns while its connections still
// close (a process's exit ends them at once), which a 3 s idle limit sampled each second can see.
const simulated = useVmFixture({env: ENV})
const {configDir, targon} = simulated
/** Long enough for a few samples (each one a second apart), short enough for a test. */
const LIMIT_S = 3

let vms: {name: string; uid: string}[] = []
const role = (index: number) => vms[index] as {name: string; uid: string}
const vm = (index: number) => simulated.farm.vm(role(index).uid)
let tunnel: ChildProcess | undefined

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '6', '--idle', `${LIMIT_S}s`, '--json'], {
    timeoutMs: 120_000,
  })
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vms = parseJson(up).data.vms
}, 150_000)

afterAll(async () => {
  tunnel?.kill()
  await targon(['down', '--all', '--yes'])
})

/** The index of a column of status's tab-separated output (stdout is not a terminal here). */
const columnOf = (table: string, header: string) => (table.split('\n')[0] ?? '').split('\t').indexOf(header)

const live = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

/** Reads status --usage until `ready` holds of it (each VM's usage by uid), for at most 30 s. */
async function waitForUsage(ready: (usage: Map<string, {idle_seconds: number | null; state: string}>) => boolean): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const status = await targon(['status', '--usage', '--json'])
    const usage = new Map(parseJson(status).data.vms.map((each: {uid: string; usage: any}) => [each.uid, each.usage]))
    if (ready(usage as Map<string, {idle_seconds: number | null; state: string}>)) return
    if (Date.now() > deadline) throw new Error(`not ready in 30 s: ${JSON.stringify([...usage])}`)
    await sleep(1000)
  }
}

/** A connection to a local port, once something listens there, within `ms`. */
async function connectWithin(port: number, ms: number): Promise<Socket> {
  const deadline = Date.now() + ms
  for (;;) {
    const socket = await new Promise<Socket | undefined>((resolve) => {
      const attempt = connect(port, '127.0.0.1', () => resolve(attempt))
      attempt.on('error', () => resolve(undefined))
    })
    if (socket) return socket
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`)
    await sleep(200)
  }
}

describe('down --idle', () => {
  it('deletes the idle VM and keeps the busy GPU, the open tunnel, the dstack task at 0 % GPU and the VM without a sampler', async () => {
    vm(1).setGpuUtil(85)
    // Busy for now: kept for the scenarios below.
    vm(5).setGpuUtil(50)
    // A notebook tunnel: a real ssh -N -L through targon ssh, held open.
    const port = String(await unusedPort())
    tunnel = spawn(process.execPath, [BIN, 'ssh', role(2).name, '-N', '-L', `${port}:localhost:8188`], {
      env: baseEnv(simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir})),
      stdio: 'ignore',
    })
    vm(3).setTasks([{id: 'setup-1', status: 'pulling'}])
    const removed = await targon([
      'exec',
      '--vms',
      role(4).name,
      '--',
      'sudo systemctl stop targon-fleet-idle && sudo rm -f /usr/local/lib/targon-fleet/idle-sampler.py',
    ])
    expect(removed.code, removed.stderr).toBe(0)
    // From the VMs' idle clocks, which opens no session: VM 0 idle past its limit (whole seconds), and VM 1's GPU, VM
    // 2's tunnel (once targon ssh has connected) and VM 3's task seen.
    await idlePast(simulated.farm, role(0).uid, LIMIT_S + 1)
    await sampleWhere(simulated.farm, role(1).uid, (clock) => clock.busy.includes('gpu 0 at 85 %'))
    await sampleWhere(simulated.farm, role(2).uid, (clock) => clock.busy.includes('ssh tunnel'))
    await sampleWhere(simulated.farm, role(3).uid, (clock) => clock.busy.includes('dstack task setup-1 pulling'))

    // A notify URL gets one message for the run, naming what was deleted for idleness.
    const received: {text: string; targon: {event: string; vms: {uid: string}[]}}[] = []
    const receiver = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        received.push(JSON.parse(body))
        response.end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    const down = await targon(['down', '--idle', '--json'], {env: {TARGON_NOTIFY_URL: hook}})
    await new Promise((resolve) => receiver.close(resolve))
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(received, down.stdout + down.stderr).toHaveLength(1)
    expect(received[0]?.targon).toMatchObject({event: 'down-deleted', vms: [{uid: role(0).uid}]})
    expect(received[0]?.text).toContain('--idle deleted 1 VM')
    const doc = parseJson(down)
    const deleted = doc.data.results
      .filter((result: {billing: boolean}) => result.billing === false)
      .map((result: {uid: string}) => result.uid)
    expect(deleted).toEqual([role(0).uid])
    expect(live().has(role(0).uid)).toBe(false)
    const kept = new Map(doc.data.kept.map((each: {uid: string; reason: string; state: string}) => [each.uid, each]))
    expect(kept.get(role(1).uid)).toMatchObject({state: 'busy'})
    expect((kept.get(role(1).uid) as {reason: string}).reason).toContain('gpu 0 at 85 %')
    expect((kept.get(role(2).uid) as {reason: string}).reason).toContain('ssh tunnel')
    expect((kept.get(role(3).uid) as {reason: string}).reason).toContain('dstack task setup-1 pulling')
    expect(kept.get(role(4).uid)).toMatchObject({state: 'unreadable'})
    expect(doc.warnings.join('\n')).toContain('idle clock could not be read')
    for (const index of [1, 2, 3, 4]) expect(live().has(role(index).uid)).toBe(true)
  })

  it('status --usage shows each VM: GPU, sessions and tunnels, tasks, and how long it has been idle, or why it cannot say', async () => {
    vm(5).setGpuUtil(0)
    // The dstack server's own tunnel to the shim (a forward to 127.0.0.1:10998, a connection held through it) is no
    // user's activity: told apart by the sampler's one root command, ss.
    const port = await unusedPort()
    const shimTunnel = spawn(process.execPath, [BIN, 'ssh', role(5).name, '-N', '-L', `${port}:127.0.0.1:10998`], {
      env: baseEnv(simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir})),
      stdio: 'ignore',
    })
    try {
      // The forward opens once targon ssh has connected, which takes a while on a loaded machine.
      const held = await connectWithin(port, 30_000)
      try {
        await waitForUsage((usage) => usage.get(role(5).uid)?.state === 'idle' && usage.get(role(5).uid)?.idle_seconds !== 0)
      } finally {
        held.destroy()
      }
    } finally {
      shimTunnel.kill()
    }
    const status = await targon(['status', '--usage', '--json'])
    expect(status.code, status.stderr).toBe(0)
    const shown = new Map(parseJson(status).data.vms.map((each: {uid: string}) => [each.uid, each]))
    const usage = (index: number) => (shown.get(role(index).uid) as {usage: Record<string, any>}).usage
    expect(usage(1).gpus[0].util_pct).toBe(85)
    expect(usage(2).tunnels).toBe(1)
    expect(usage(3).dstack_tasks).toEqual([{id: 'setup-1', status: 'pulling'}])
    expect(usage(4)).toMatchObject({idle_seconds: null, state: 'unreadable'})
    expect(usage(5).state).toBe('idle')
    expect((shown.get(role(5).uid) as {idle_seconds: number}).idle_seconds).toBeGreaterThanOrEqual(1)
    // From a config directory without the project key, every clock is unreadable: nothing is deleted, exit 0, a warning.
    const elsewhere = await targon(['down', '--idle', '--json'], {env: {TARGON_CONFIG_DIR: tempDir('targon-cron-')}})
    expect(elsewhere.code, elsewhere.stderr).toBe(0)
    const away = parseJson(elsewhere)
    expect(away.data.results).toEqual([])
    expect(away.data.kept.every((each: {state: string}) => each.state === 'unreadable')).toBe(true)
    expect(away.warnings.join('\n')).toContain('idle clock could not be read')
    const text = await targon(['status', '--usage'])
    expect(text.stdout).toContain('IDLE_REASON')
    expect(text.stdout).toContain('85%')

    // A VM without a local record (rented from another directory): whether it is bootstrapped is not known (?),
    // unless --usage connects to it anyway, when its marker says so.
    const record = join(configDir, 'vms', 'acme', `${role(2).name}.json`)
    renameSync(record, `${record}.away`)
    try {
      const unknown = parseJson(await targon(['status', '--json', role(2).name])).data.vms[0]
      expect(unknown).toMatchObject({bootstrapped: null, local_record: 'missing'})
      const shownUnknown = await targon(['status', role(2).name])
      expect(shownUnknown.stdout.split('\n')[1]?.split('\t')[columnOf(shownUnknown.stdout, 'BOOTSTRAPPED')]).toBe('?')
      const probed = await targon(['status', '--usage', role(2).name])
      expect(probed.stdout.split('\n')[1]?.split('\t')[columnOf(probed.stdout, 'BOOTSTRAPPED')]).toBe('yes')
      const probedJson = parseJson(await targon(['status', '--usage', '--json', role(2).name])).data.vms[0]
      expect(probedJson).toMatchObject({bootstrapped: true, local_record: 'missing'})
      expect(probedJson.usage.tunnels).toBe(1)
    } finally {
      renameSync(`${record}.away`, record)
    }
  })

  it('a clock skewed by an hour does not make a VM look idle, and a rebooted VM keeps its sampler', async () => {
    // VM 1 goes idle and its clock jumps an hour ahead at once: the gap in its samples counts as activity, so its
    // idle time, once a sample after the jump is read, is the few seconds since, never the hour. (VM 1 is really idle
    // from now on, so a slow machine may see it over its limit within seconds: the figure is what is checked.)
    vm(1).setGpuUtil(0)
    vm(1).setClockOffset(3600)
    await waitForUsage((usage) => ['idle', 'busy'].includes(usage.get(role(1).uid)?.state ?? ''))
    const skewed = parseJson(await targon(['status', '--usage', '--json', role(1).name])).data.vms[0].usage
    expect(skewed.idle_seconds, JSON.stringify(skewed)).toBeLessThan(600)
    const down = await targon(['down', '--idle', '--json'])
    expect(down.code, down.stderr).toBe(0)
    for (const index of [2, 3, 4]) expect(live().has(role(index).uid)).toBe(true)

    // VM 3 reboots: its sampler comes back by itself (it is enabled), and its dstack task is still busy.
    await vm(3).reboot()
    await sleep(2500)
    const after = await targon(['status', '--usage', '--json', role(3).name])
    const usage = parseJson(after).data.vms[0].usage
    expect(usage.state).toBe('busy')
    expect(usage.idle_reason).toContain('dstack task')
    const sampler = await targon(['exec', '--vms', role(3).name, '--', 'systemctl is-active targon-fleet-idle'])
    expect(sampler.stdout.trim()).toBe(`${role(3).name} | active`)
  })

  it('two cron runs at once delete each idle VM once; a VM refusing SSH is kept', async () => {
    vm(3).setTasks([{id: 'setup-1', status: 'terminated'}])
    tunnel?.kill()
    tunnel = undefined
    // SSH refusing the pinned key on VM 2: its clock cannot be read, so it is kept.
    await vm(2).rotateHostKey()
    // Until their clocks say idle past the limit (a few samples; slower on a loaded machine): every VM still up but
    // the one without a sampler and the one refusing SSH (VM 5 may have gone already, idle in the scenario before).
    for (const index of [1, 3, 5]) if (live().has(role(index).uid)) await idlePast(simulated.farm, role(index).uid, LIMIT_S + 1)
    const [first, second] = await Promise.all([targon(['down', '--idle', '--json']), targon(['down', '--idle', '--json'])])
    expect(first?.code, first?.stderr).toBe(0)
    expect(second?.code, second?.stderr).toBe(0)
    expect(simulated.sim.doubleDeletes.size).toBe(0)
    for (const index of [1, 3, 5]) expect(live().has(role(index).uid)).toBe(false)
    // Still kept: the VM without a sampler and the one refusing SSH, whose clocks cannot be read.
    for (const index of [2, 4]) expect(live().has(role(index).uid)).toBe(true)
    const reasons = new Map(parseJson(first).data.kept.map((each: {uid: string; reason: string}) => [each.uid, each.reason]))
    expect(reasons.get(role(2).uid)).toContain('host key')
  })
})

describe('up --name on a VM without a sampler', () => {
  it('installs it again, and --idle-check then decides: busy while the check says so, idle once it exits 0', async () => {
    const label = role(4).name.replace(/^tcli-default-/, '')
    const adopted = await targon(
      ['up', 'rtx6000b-small', '--max-price', '1.8', '--name', label, '--idle-check', 'test -e /tmp/idle-ok', '--json'],
      {
        timeoutMs: 90_000,
      },
    )
    expect(adopted.code, adopted.stdout + adopted.stderr).toBe(0)
    expect(parseJson(adopted).data.vms[0].uid).toBe(role(4).uid)
    await sampleWhere(simulated.farm, role(4).uid, (clock) => clock.busy.includes('idle check: busy'))
    const busy = parseJson(await targon(['status', '--usage', '--json', role(4).name])).data.vms[0].usage
    expect(busy.idle_reason).toContain('idle check: busy')
    // The check runs as ubuntu: a file of ubuntu's makes it say idle.
    expect((await targon(['exec', '--vms', role(4).name, '--', 'touch /tmp/idle-ok'])).code).toBe(0)
    await cleanSample(simulated.farm, role(4).uid)
    // And what the CLI reports of it.
    await waitForUsage((usage) => usage.get(role(4).uid)?.state === 'idle')

    // --idle-containers: a running container is activity, listed through sudoers, never the docker group.
    vm(4).setContainers(['comfyui'])
    const containers = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', label, '--idle-containers', '--json'], {
      timeoutMs: 90_000,
    })
    expect(containers.code, containers.stdout + containers.stderr).toBe(0)
    await sampleWhere(simulated.farm, role(4).uid, (clock) => clock.busy.includes('container comfyui'))
    const running = parseJson(await targon(['status', '--usage', '--json', role(4).name])).data.vms[0].usage
    expect(running.containers).toEqual(['comfyui'])
    expect(await onVm4('id -nG targon-idle; stat -c "%a %U %G" /etc/targon-fleet/idle.conf')).toEqual([
      'targon-idle',
      '640 root targon-idle',
    ])

    // A VM whose sampler joined the docker group (as earlier versions did), and runs with it: the next up --name
    // --reinstall takes it out, of the user and of the running sampler.
    await onVm4(
      'getent group docker >/dev/null || sudo groupadd --system docker; sudo usermod -aG docker targon-idle; sudo chmod 0644 /etc/targon-fleet/idle.conf; sudo systemctl restart targon-fleet-idle',
    )
    expect(await samplerInDocker()).toBe(true)
    const reinstalled = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', label, '--reinstall', '--json'], {
      timeoutMs: 90_000,
    })
    expect(reinstalled.code, reinstalled.stdout + reinstalled.stderr).toBe(0)
    expect(await onVm4('id -nG targon-idle; stat -c "%a %U %G" /etc/targon-fleet/idle.conf')).toEqual([
      'targon-idle',
      '640 root targon-idle',
    ])
    expect(await samplerInDocker()).toBe(false)
    // Still listed through its one sudo rule: the container, not "containers unreadable".
    await sampleWhere(simulated.farm, role(4).uid, (clock) => clock.busy.includes('container comfyui'))
  })
})

/** Whether the running sampler of the fourth VM holds the docker group (its process's Groups line, not the user's). */
async function samplerInDocker(): Promise<boolean> {
  const [groups, docker] = await onVm4(
    'grep "^Groups:" "/proc/$(sudo cat /var/lib/sim-doubles/units/targon-fleet-idle.pid)/status"; getent group docker | cut -d: -f3',
  )
  expect(groups, 'the sampler runs').toMatch(/^Groups:/)
  expect(docker).toMatch(/^\d+$/)
  return (groups as string)
    .split(/\s+/)
    .slice(1)
    .includes(docker as string)
}

/** Runs a command on the fourth VM as ubuntu: the lines it printed. */
async function onVm4(command: string): Promise<string[]> {
  const run = await targon(['exec', '--json', '--vms', role(4).name, '--', command])
  expect(run.code, run.stdout + run.stderr).toBe(0)
  return parseJson(run).data.results[0].tail
}
