/**
 * The team guard enforces every owner's limits from one always-on directory, with simulated VMs: alice and bob rent
 * from their own directories, a third installs the team guard, and then alice's and bob's directories are deleted from
 * disk (their laptops asleep, or gone). The team guard's sweep reads the limits each VM carries over its key: alice's
 * TTL and bob's spend cap fire from there. A VM made before the guard key, and a VM whose file says "no limit", are
 * not covered: reported, never deleted on a guess. Time passes as the VMs' own files say (a VM may tighten its limits):
 * a deadline is moved, never waited for.
 */
import {rmSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {tempDir, writeConfigFile} from '../helpers/cli.js'
import {fakeCrontab} from '../helpers/crontab.js'
import {useVmFixture} from '../helpers/fixture.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const simulated = useVmFixture({inProcess: true, env: {TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
const {targon} = simulated
const LIMITS = '/etc/targon-fleet/limits.json'

const live = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

describe('the team guard sweep', () => {
  it("deletes alice's VM at its TTL and bob's at its budget with their directories gone; leaves what it cannot read", async () => {
    const dirs = {alice: tempDir('targon-alice-'), bob: tempDir('targon-bob-'), guard: tempDir('targon-team-')}
    writeConfigFile(dirs.guard, {'api-key': DEFAULT_TOKEN, 'api-url': simulated.sim.url})
    const upAs = async (who: 'alice' | 'bob', limits: string[]) => {
      const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', ...limits, '--json'], {
        config: dirs[who],
        env: {TARGON_OWNER: who},
        timeoutMs: 120_000,
      })
      expect(up.code, up.stdout + up.stderr).toBe(0)
      return up.json.data.vms[0] as {name: string; uid: string}
    }
    /** Changes the limits file a VM carries, as root on the VM, from its owner's directory. */
    const tighten = async (who: 'alice' | 'bob', vm: {name: string}, change: Record<string, unknown>) => {
      const read = await targon(['exec', '--vms', vm.name, '--', `cat ${LIMITS}`], {config: dirs[who], env: {TARGON_OWNER: who}})
      expect(read.code, read.stderr).toBe(0)
      const file = JSON.parse(read.stdout.replaceAll(`${vm.name} | `, ''))
      const encoded = Buffer.from(JSON.stringify({...file, ...change})).toString('base64')
      const written = await targon(['exec', '--vms', vm.name, '--', `echo ${encoded} | base64 -d | sudo tee ${LIMITS} >/dev/null`], {
        config: dirs[who],
        env: {TARGON_OWNER: who},
      })
      expect(written.code, written.stderr).toBe(0)
    }

    const early = await upAs('alice', ['--ttl', '1h'])
    const crontab = fakeCrontab()
    const installed = await targon(['guard', 'install', '--team', '--cron', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(installed.code, installed.stdout + installed.stderr).toBe(0)
    const [timed, capped, hostile, extended] = await Promise.all([
      upAs('alice', ['--ttl', '1h']),
      upAs('bob', ['--max-cost', '0.3']),
      upAs('bob', ['--ttl', '1h']),
      upAs('alice', ['--ttl', '1h']),
    ])

    // Alice's deadline and bob's budget are reached; bob's other VM rewrites its limits to none.
    await tighten('alice', timed, {ttl_expires_at: new Date(Date.now() - 60_000).toISOString()})
    await tighten('bob', capped, {max_cost_usd: 0.0001})
    await tighten('bob', hostile, {idle_limit_seconds: null, max_cost_usd: null, ttl_expires_at: null})
    await tighten('alice', extended, {ttl_expires_at: new Date(Date.now() - 60_000).toISOString()})
    rmSync(dirs.alice, {force: true, recursive: true})
    rmSync(dirs.bob, {force: true, recursive: true})

    // The team guard's directory sees each VM's limits, read from the VM: no local record of any of them.
    const status = await targon(['status', '--json'], {config: dirs.guard})
    expect(status.code, status.stderr).toBe(0)
    const shown = new Map(status.json.data.vms.map((vm: {uid: string}) => [vm.uid, vm]))
    expect(shown.get(capped.uid)).toMatchObject({limits_source: 'vm', local_record: 'missing', max_cost_usd: 0.0001})
    expect(shown.get(hostile.uid)).toMatchObject({ends_by: 'limits unknown', limits_source: null, vm_limits: 'read'})
    expect(shown.get(early.uid)).toMatchObject({limits_source: null, vm_limits: 'unreachable'})

    // From the team guard's directory, extend moves the limits a VM carries: no record of it is needed there.
    const moved = await targon(['extend', extended.name, '--by', '2h', '--ttl-only', '--any-owner', '--json'], {config: dirs.guard})
    expect(moved.code, moved.stdout + moved.stderr).toBe(0)
    expect(moved.json.data.vms).toMatchObject([{limits_on_vm: 'written', uid: extended.uid}])
    expect(Date.parse(moved.json.data.vms[0].ttl_expires_at)).toBeGreaterThan(Date.now() + 100 * 60_000)
    // A VM whose file sets no limit has nothing to move.
    const refused = await targon(['extend', hostile.name, '--by', '2h', '--any-owner', '--json'], {config: dirs.guard})
    expect(refused.code, refused.stdout).toBe(2)
    expect(refused.json.error.message).toContain('sets no limit')

    const sweep = await targon(['sweep', '--team', '--json'], {config: dirs.guard})
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const {data} = sweep.json
    expect(data.selection).toMatchObject({any_owner: true, owner: null, team: true})
    const reasons = Object.fromEntries(data.results.map((result: {uid: string; reason: string}) => [result.uid, result.reason]))
    expect(reasons).toEqual({[capped.uid]: 'max-cost', [timed.uid]: 'ttl'})
    expect(live().has(timed.uid)).toBe(false)
    expect(live().has(capped.uid)).toBe(false)
    // Made before the guard key, or saying "no limit": not covered, reported, left billing; never "unlimited".
    const notCovered = new Map(data.not_covered.map((vm: {uid: string; reason: string}) => [vm.uid, vm.reason]))
    expect([...notCovered.keys()].sort()).toEqual([early.uid, hostile.uid].sort())
    expect(notCovered.get(hostile.uid)).toContain('sets no limit')
    expect(notCovered.get(early.uid)).toContain("refused the team guard's key")
    expect(data.unlimited.map((vm: {uid: string}) => vm.uid)).not.toContain(hostile.uid)
    expect(live().has(early.uid)).toBe(true)
    expect(live().has(hostile.uid)).toBe(true)
    expect(live().has(extended.uid)).toBe(true)

    const text = await targon(['sweep', '--team', '--dry-run'], {config: dirs.guard})
    expect(text.stdout).toContain(`not covered: ${early.name} (${early.uid}) of alice: limits unknown`)

    await targon(['down', '--all', '--any-owner', '--yes', '--no-hooks'], {config: dirs.guard})
  }, 180_000)
})
