/**
 * A host that dstack owns is dstack's (simulated VMs, real sshd, the shim double answering as dstack-shim): after a
 * dstack server took the host over, as dstack 0.21.2 does it (test/vm/dstack-deploy.ts), a repeat `up` replaces,
 * reconfigures and restarts nothing, accepts the shim's version and reports the host dstack-managed; a shim with a
 * task at work is never restarted, whoever installed it; --force-shim takes the host back, never under a task.
 */
import {afterAll, describe, expect, it} from 'vitest'

import {shellQuote} from '../../src/lib/adapters/ssh/session.js'
import {parseJson} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {PROJECT_KEY, dstackDeployScript, dstackShimEnv, type DstackDeploy} from '../vm/dstack-deploy.js'

const simulated = useVmFixture({inProcess: true, env: {TARGON_SHIM_HEALTH_TIMEOUT: '8'}})
const {targon} = simulated

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

async function up(name: string, ...extra: string[]) {
  const result = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', name, '--json', ...extra], {timeoutMs: 120_000})
  return {doc: parseJson(result), result}
}

/** A VM that targon bootstrapped, then a dstack server took over. */
async function takenOver(name: string, deploy: DstackDeploy) {
  const first = await up(name)
  expect(first.result.code, first.result.stdout + first.result.stderr).toBe(0)
  const uid = first.doc.data.vms[0].uid as string
  const deployed = await targon(['exec', '--vms', uid, '--', dstackDeployScript(deploy)])
  expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0)
  return {uid, vm: simulated.farm.vm(uid)}
}

/** What a repeat up must leave as it is on the VM: the shim's binary, env, unit and process. */
function shimState(vm: ReturnType<typeof simulated.farm.vm>) {
  return {
    binary: vm.readFile('/usr/local/bin/dstack-shim'),
    env: vm.readFile('/root/.dstack/shim.env'),
    pid: vm.readFile('/var/lib/sim-doubles/units/dstack-shim.pid'),
    unit: vm.readFile('/etc/systemd/system/dstack-shim.service'),
  }
}

const shimChanges = (calls: string[]) =>
  calls.filter((call) => /^(systemctl (restart|stop) dstack-shim|curl .*dstack-shim-linux)/.test(call))

describe('a repeat up on a host that dstack took over', () => {
  it('leaves the shim.env of a fleet with env: (dstack 0.21.2 writes no marker comment), restarts nothing, and says dstack-managed', async () => {
    const {vm} = await takenOver('env-fleet', {env: {HTTP_PROXY: 'http://proxy.internal:3128'}, version: '0.21.2'})
    expect(vm.readFile('/root/.dstack/shim.env')).toContain('HTTP_PROXY="http://proxy.internal:3128"')
    const before = {calls: vm.calls().length, state: shimState(vm)}
    const again = await up('env-fleet')
    expect(again.result.code, again.result.stdout + again.result.stderr).toBe(0)
    expect(shimState(vm)).toEqual(before.state)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
    expect(again.doc.data.vms[0].dstack).toEqual({
      dstack_sign: 'shim.env was rewritten since targon wrote it',
      healthy: true,
      managed_by: 'dstack-managed',
      shim_version: '0.21.2',
    })
    // The text output says so too.
    const shown = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'env-fleet'])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stderr).toContain('env-fleet: dstack-managed (shim.env was rewritten since targon wrote it)')
  })

  it("finds dstack's own shim.env (no final newline) equal to targon's: nothing is restarted", async () => {
    const {vm} = await takenOver('same-env', {version: '0.21.2'})
    expect(vm.readFile('/root/.dstack/shim.env')).toBe(dstackShimEnv('0.21.2'))
    const before = {calls: vm.calls().length, state: shimState(vm)}
    const again = await up('same-env')
    expect(again.result.code, again.result.stdout + again.result.stderr).toBe(0)
    expect(shimState(vm)).toEqual(before.state)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
  })

  it("accepts the shim of dstack's own version, and the project's key tells dstack's host", async () => {
    const {vm} = await takenOver('newer', {keys: [PROJECT_KEY], version: '0.21.3'})
    const before = {calls: vm.calls().length, state: shimState(vm)}
    const again = await up('newer')
    expect(again.result.code, again.result.stdout + again.result.stderr).toBe(0)
    expect(shimState(vm)).toEqual(before.state)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
    expect(again.doc.data.vms[0].dstack).toMatchObject({
      dstack_sign: "authorized_keys holds a dstack project's key",
      managed_by: 'dstack-managed',
      shim_version: '0.21.3',
    })
  })

  it('knows the shim and runner of another version, and the marker comment of newer dstack versions', async () => {
    const {vm} = await takenOver('versions', {version: '0.21.3'})
    const again = await up('versions')
    expect(again.doc.data.vms[0].dstack.dstack_sign).toBe('shim.env was rewritten since targon wrote it')
    // The signs, one by one: dstack's shim.env as targon's own, then dstack's runner alone.
    const ownEnv = `printf '%s' ${shellQuote(dstackShimEnv('0.21.2'))} | sudo tee /root/.dstack/shim.env >/dev/null`
    const asked = await targon(['exec', '--vms', again.doc.data.vms[0].uid, '--', ownEnv])
    expect(asked.code, asked.stderr).toBe(0)
    expect((await up('versions')).doc.data.vms[0].dstack.dstack_sign).toBe('dstack-shim 0.21.3 runs where targon installed 0.21.2')
    // The commit after 0.21.2 tags its keys; dstack's shim of another version is accepted (exit 0, not BOOTSTRAP_FAILED).
    const tagged = await targon([
      'exec',
      '--vms',
      again.doc.data.vms[0].uid,
      '--',
      dstackDeployScript({keys: [PROJECT_KEY], tagged: true, version: '0.21.3'}),
    ])
    expect(tagged.code, tagged.stderr).toBe(0)
    expect(vm.readFile('/home/ubuntu/.ssh/authorized_keys')).toContain('main@dstack # added by dstack')
    const latest = await up('versions')
    expect(latest.result.code, latest.result.stdout).toBe(0)
    expect(latest.doc.data.vms[0].dstack).toMatchObject({dstack_sign: 'authorized_keys holds keys added by dstack', shim_version: '0.21.3'})
  })

  it("knows a runner that dstack upgraded on its own (/api/components/install), the shim's version unchanged", async () => {
    const first = await up('runner')
    expect(first.result.code).toBe(0)
    const uid = first.doc.data.vms[0].uid as string
    const runner = `printf '#!/bin/sh\\n[ "$1" = --version ] && echo "dstack-runner version 0.21.3"\\n' | sudo tee /usr/local/bin/dstack-runner >/dev/null`
    expect((await targon(['exec', '--vms', uid, '--', runner])).code).toBe(0)
    const vm = simulated.farm.vm(uid)
    expect(vm.readFile('/usr/local/bin/dstack-runner')).toContain('dstack-runner version 0.21.3')
    const before = {calls: vm.calls().length, state: shimState(vm)}
    const again = await up('runner')
    expect(again.doc.data.vms[0].dstack.dstack_sign).toBe('dstack-runner 0.21.3 runs where targon installed 0.21.2')
    expect(shimState(vm)).toEqual(before.state)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
  })
})

describe('a shim with a task at work', () => {
  it('is never restarted, whoever installed it: a new --dstack-version waits, and --force-shim is refused', async () => {
    const first = await up('busy')
    expect(first.result.code).toBe(0)
    const vm = simulated.farm.vm(first.doc.data.vms[0].uid)
    vm.setTasks([{id: 'a1b2c3d4-run-0', status: 'running'}])
    const before = {calls: vm.calls().length, state: shimState(vm)}
    const again = await up('busy', '--dstack-version', '0.21.3')
    expect(again.result.code, again.result.stdout + again.result.stderr).toBe(0)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
    expect(again.doc.data.vms[0].dstack).toMatchObject({
      dstack_sign: 'dstack tasks at work: a1b2c3d4-run-0 running',
      managed_by: 'dstack-managed',
      shim_version: '0.21.2',
    })
    const forced = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'busy', '--force-shim'])
    expect(forced.code, forced.stdout).toBe(2)
    // One line: what was refused and why, that the adopted VM was kept, and the fix.
    const errors = forced.stderr.split('\n').filter((line) => line.startsWith('Error: '))
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(
      /^Error: --force-shim would restart dstack's shim under its tasks at work: a1b2c3d4-run-0 running; kept .*\. Hint: run it again once the tasks have ended, or without --force-shim$/,
    )
    expect(shimState(vm)).toEqual(before.state)
    expect(shimChanges(vm.calls().slice(before.calls))).toEqual([])
  })

  it("--force-shim takes a host without a task back: targon's shim and shim.env, restarted", async () => {
    const {vm} = await takenOver('forced', {env: {HTTP_PROXY: 'http://proxy.internal:3128'}, keys: [PROJECT_KEY], version: '0.21.3'})
    const before = vm.calls().length
    const forced = await up('forced', '--force-shim')
    expect(forced.result.code, forced.result.stdout + forced.result.stderr).toBe(0)
    expect(forced.doc.data.vms[0].dstack).toMatchObject({managed_by: 'targon', shim_version: '0.21.2'})
    expect(vm.readFile('/root/.dstack/shim.env')).toBe(dstackShimEnv('0.21.2'))
    expect(vm.calls().slice(before)).toContain('systemctl restart dstack-shim')
  })

  it('--force-shim needs the shim-start phase', async () => {
    const refused = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-shim', '--force-shim'])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--force-shim needs the shim-start phase')
  })
})
