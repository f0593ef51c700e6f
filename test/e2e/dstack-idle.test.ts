/**
 * A dstack job is never taken for idle (simulated VMs, real sshd, the shim double answering as dstack-shim 0.21.2):
 * a task pulling its image at 0 % GPU keeps its VM through down --idle and through the guard's sweep, whether the shim
 * lists its tasks in the current shape ({"tasks": [...]}), in the shape of shims before 0.19.26 ({"ids": [...]}), or
 * in neither (unknown, never "no tasks"), while a truly idle VM beside them is deleted each time. The shim's API
 * answers root and ubuntu only.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {idlePast} from '../helpers/idle-clock.js'

const ENV = {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}
// As processes: the VMs' idle clocks count SSH sessions, and a run in process returns while its connections still
// close (a process's exit ends them at once), which a 3 s idle limit sampled each second can see.
const simulated = useVmFixture({env: ENV})
const {targon} = simulated
const LIMIT_S = 3

let vms: {name: string; uid: string}[] = []
const role = (index: number) => vms[index] as {name: string; uid: string}
const vm = (index: number) => simulated.farm.vm(role(index).uid)
const live = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

/** The three dstack hosts: the same task pulling its image, listed three ways. */
const DSTACK = [2, 3, 4]

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '5', '--idle', `${LIMIT_S}s`, '--json'], {
    timeoutMs: 120_000,
  })
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vms = parseJson(up).data.vms
  vm(2).setTasks([{id: 'a1b2c3d4-run-1', status: 'pulling'}])
  vm(3).setTasks([{id: 'a1b2c3d4-run-2', status: 'pulling'}], 'ids')
  vm(4).setTaskListAnswer('{"task_ids": ["a1b2c3d4-run-3"]}')
}, 150_000)

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

/** Reads status --usage until each VM named is idle past the limit, for at most 30 s; the usage of every VM. */
async function usageIdlePast(indexes: number[]): Promise<Map<string, {idle_reason: string; idle_seconds: number | null; state: string}>> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const status = await targon(['status', '--usage', '--json'])
    const usage = new Map(parseJson(status).data.vms.map((each: {uid: string; usage: any}) => [each.uid, each.usage]))
    if (indexes.every((index) => ((usage.get(role(index).uid) as {idle_seconds: number | null})?.idle_seconds ?? 0) > LIMIT_S))
      return usage as Map<string, {idle_reason: string; idle_seconds: number | null; state: string}>
    if (Date.now() > deadline) throw new Error(`not idle past the limit in 30 s: ${status.stdout}`)
    await sleep(1000)
  }
}

function expectDstackHostsKept(kept: Map<string, {reason: string; state: string}>): void {
  expect(kept.get(role(2).uid)).toMatchObject({reason: expect.stringContaining('dstack task a1b2c3d4-run-1 pulling'), state: 'busy'})
  expect(kept.get(role(3).uid)).toMatchObject({reason: expect.stringContaining('dstack task a1b2c3d4-run-2 pulling'), state: 'busy'})
  expect(kept.get(role(4).uid)).toMatchObject({
    reason: expect.stringContaining("dstack tasks unknown: the shim's task list has neither tasks nor ids"),
    state: 'busy',
  })
  for (const index of DSTACK) expect(live().has(role(index).uid)).toBe(true)
}

describe('a dstack task at 0 % GPU', () => {
  it('status --usage says why each dstack host is busy', async () => {
    vm(1).setGpuUtil(90)
    const usage = await usageIdlePast([0])
    expect(usage.get(role(2).uid)?.state).toBe('busy')
    expect(usage.get(role(3).uid)?.idle_reason).toContain('dstack task a1b2c3d4-run-2 pulling')
    expect(usage.get(role(4).uid)?.idle_reason).toContain('dstack tasks unknown')
    const shown = await targon(['status', '--usage'])
    expect(shown.code, shown.stderr).toBe(0)
    // Tab-separated off a terminal: the tasks at work, or '?' where the list could not be read.
    const [header = '', ...rows] = shown.stdout.split('\n')
    const tasksOf = (index: number) => rows.find((row) => row.includes(role(index).uid))?.split('\t')[header.split('\t').indexOf('TASKS')]
    expect([tasksOf(2), tasksOf(3), tasksOf(4), tasksOf(0)]).toEqual(['1', '1', '?', '0'])
    expect(shown.stdout).toContain('busy: dstack task a1b2c3d4-run-1 pulling')
  })

  it('keeps its VM through down --idle, which deletes the idle VM beside it', async () => {
    // Read from the VM's idle clock, not by status --usage: a probe's session that a sample catches is activity, and
    // the VM, idle a moment before, would be kept. A second past the limit: the clock counts whole seconds.
    await idlePast(simulated.farm, role(0).uid, LIMIT_S + 1)
    const down = await targon(['down', '--idle', '--json'])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    const doc = parseJson(down).data
    expect(doc.results.filter((result: {billing: boolean}) => !result.billing).map((result: {uid: string}) => result.uid)).toEqual([
      role(0).uid,
    ])
    expectDstackHostsKept(new Map(doc.kept.map((each: {uid: string}) => [each.uid, each])))
    expect(live().has(role(0).uid)).toBe(false)
  })

  it("keeps its VM through the guard's sweep, which deletes the idle VM beside it", async () => {
    vm(1).setGpuUtil(0)
    await idlePast(simulated.farm, role(1).uid, LIMIT_S + 1)
    const sweep = await targon(['sweep', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const doc = parseJson(sweep).data
    expect(doc.results).toMatchObject([{action: 'deleted', billing: false, reason: 'idle', uid: role(1).uid}])
    expectDstackHostsKept(new Map(doc.kept.map((each: {uid: string}) => [each.uid, each])))
    expect(live().has(role(1).uid)).toBe(false)
  })

  it("lets only root and ubuntu reach the shim's API, also after a reboot; the sampler reads it through sudo", async () => {
    // Who can open the shim's port on loopback, as each local user: targon-idle (the sampler's) and any other user
    // are refused; root and ubuntu (dstack's server tunnels in as ubuntu) get an answer.
    const reach = `for who in root ubuntu targon-idle nobody; do
      if sudo -n -u "$who" python3 -c 'import socket; socket.create_connection(("127.0.0.1", 10998), timeout=5)' 2>/dev/null
      then echo "$who reaches"; else echo "$who refused"; fi
    done`
    const expected = ['root reaches', 'ubuntu reaches', 'targon-idle refused', 'nobody refused']
    const tried = async () => {
      const result = await targon(['exec', '--vms', role(3).uid, '--json', '--', reach])
      expect(result.code, result.stdout + result.stderr).toBe(0)
      return parseJson(result).data.results[0].tail
    }
    expect(await tried()).toEqual(expected)
    const rebooted = Date.now() / 1000
    await vm(3).reboot()
    await sleep(2000)
    expect(await tried()).toEqual(expected)
    // The sampler, as targon-idle, still sees the task through its one sudo rule.
    for (const deadline = Date.now() + 30_000; ; await sleep(500)) {
      const clock = JSON.parse(vm(3).readFile('/var/lib/targon-fleet/idle.json') || '{}')
      if (clock.sampled_at > rebooted + 1) {
        expect(clock.busy).toContain('dstack task a1b2c3d4-run-2 pulling')
        break
      }
      if (Date.now() > deadline) throw new Error(`no sample after the reboot in 30 s: ${JSON.stringify(clock)}`)
    }
    const usage = parseJson(await targon(['status', '--usage', '--json', role(3).name])).data.vms[0].usage
    expect(usage).toMatchObject({dstack_tasks: [{id: 'a1b2c3d4-run-2', status: 'pulling'}], state: 'busy'})
  })

  it('lets a host go once its task is terminated', async () => {
    vm(2).setTasks([{id: 'a1b2c3d4-run-1', status: 'terminated'}])
    await idlePast(simulated.farm, role(2).uid, LIMIT_S + 1)
    const down = await targon(['down', '--idle', '--json'])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(parseJson(down).data.results, down.stdout).toMatchObject([{billing: false, uid: role(2).uid}])
    expect(live().has(role(3).uid) && live().has(role(4).uid)).toBe(true)
  })
})
