/**
 * targon sweep on simulated VMs (real sshd, the idle sampler the bootstrap installs): one sweep deletes the VM idle
 * past its limit and keeps the busy one and one whose idle deletion extend held off, with down --idle's fail-safe rules, and reports the VM under no limit.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {cleanSample, idlePast} from '../helpers/idle-clock.js'

const ENV = {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}
// As processes: the VMs' idle clocks count SSH sessions, and a run in process returns while its connections still
// close (a process's exit ends them at once), which a 3 s idle limit sampled each second can see.
const simulated = useVmFixture({env: ENV})
const {targon} = simulated
const LIMIT_S = 3

let vms: {name: string; uid: string}[] = []
const role = (index: number) => vms[index] as {name: string; uid: string}

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '3', '--idle', `${LIMIT_S}s`, '--json'], {
    timeoutMs: 120_000,
  })
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vms = parseJson(up).data.vms
}, 150_000)

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

const live = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

describe('sweep and idle VMs', () => {
  it('deletes the VM idle past its limit and keeps the busy one and the one held off by extend, in the same sweep', async () => {
    simulated.farm.vm(role(1).uid).setGpuUtil(90)
    const deadline = Date.now() + 30_000
    for (;;) {
      const status = await targon(['status', '--usage', '--json'])
      const idleFor = (index: number) =>
        parseJson(status).data.vms.find((each: {uid: string}) => each.uid === role(index).uid)?.usage?.idle_seconds ?? 0
      if (idleFor(0) > LIMIT_S && idleFor(2) > LIMIT_S) break
      if (Date.now() > deadline) throw new Error(`VMs 0 and 2 not idle past their limit in 30 s: ${status.stdout}`)
      await sleep(1000)
    }

    // VM 2 is as idle as VM 0, but its idle deletion is held off for an hour.
    const extend = await targon(['extend', role(2).name, '--by', '1h', '--idle-only', '--json'])
    expect(extend.code, extend.stderr).toBe(0)
    // Written on the VM too, where its idle limit lives: its own judgement (the probe) says so, from any directory.
    expect(parseJson(extend).data.vms).toMatchObject([{idle_hold_on_vm: 'written', uid: role(2).uid}])
    const conf = JSON.parse(simulated.farm.vm(role(2).uid).readFile('/etc/targon-fleet/idle.conf'))
    expect(conf.hold_until).toBeGreaterThan(Date.now() / 1000 + 3500)
    // A shorter extension never brings the idle deletion closer, here or on the VM.
    const shorter = await targon(['extend', role(2).name, '--by', '10m', '--idle-only', '--json'])
    expect(shorter.code, shorter.stderr).toBe(0)
    expect(parseJson(shorter).data.vms).toMatchObject([
      {idle_hold_on_vm: 'written', idle_hold_until: parseJson(extend).data.vms[0].idle_hold_until},
    ])
    expect(JSON.parse(simulated.farm.vm(role(2).uid).readFile('/etc/targon-fleet/idle.conf')).hold_until).toBe(conf.hold_until)
    // The extends' own SSH sessions are activity to the sampler: its judgement is read once it is idle past its limit
    // again, when only the hold-off keeps it.
    // A second past it: the probe reads the idle time in whole seconds, and 3 s is not past a limit of 3 s.
    await idlePast(simulated.farm, role(2).uid, LIMIT_S + 1)
    const usage = parseJson(await targon(['status', '--usage', '--json'])).data.vms.find(
      (each: {uid: string}) => each.uid === role(2).uid,
    ).usage
    expect(usage.idle_reason).toContain('idle deletion held off on the VM for')
    expect(Date.parse(usage.idle_hold_until)).toBeGreaterThan(Date.now() + 3500_000)
    await cleanSample(simulated.farm, role(2).uid)
    // That status --usage was a session on VM 0 too, activity to its sampler: the sweep comes once it is idle past its
    // limit again.
    await idlePast(simulated.farm, role(0).uid, LIMIT_S + 1)
    const sweep = await targon(['sweep', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const doc = parseJson(sweep).data
    expect(doc.results).toMatchObject([{action: 'deleted', billing: false, reason: 'idle', uid: role(0).uid}])
    const kept = new Map(doc.kept.map((each: {uid: string}) => [each.uid, each]))
    expect(kept.get(role(1).uid)).toMatchObject({state: 'busy'})
    expect(kept.get(role(2).uid)).toMatchObject({reason: expect.stringContaining('idle deletion held off until'), state: 'idle'})
    expect(doc.unlimited).toEqual([])
    expect(live().has(role(0).uid)).toBe(false)
    expect(live().has(role(1).uid)).toBe(true)
    expect(live().has(role(2).uid)).toBe(true)
  })

  it('extend says when the hold-off could not be written on the VM, and keeps it here', async () => {
    await simulated.farm.stopVm(role(1).uid)
    // Its sshd is tried again for TARGON_SSH_CONNECT_TIMEOUT (30 s by default), then given up.
    const started = Date.now()
    const extend = await targon(['extend', role(1).name, '--by', '30m', '--json'], {env: {TARGON_SSH_CONNECT_TIMEOUT: '2'}})
    expect(Date.now() - started).toBeLessThan(20_000)
    expect(extend.code, extend.stderr).toBe(0)
    const doc = parseJson(extend)
    expect(doc.data.vms).toMatchObject([{idle_hold_on_vm: 'not-written', uid: role(1).uid}])
    expect(doc.data.vms[0].idle_hold_until).not.toBeNull()
    expect(doc.warnings.join('\n')).toContain(`${role(1).name}: the idle hold-off could not be written on the VM`)
  })
})
