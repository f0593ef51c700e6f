/**
 * The org's team guard, with simulated VMs: alice and bob rent in one org from their own config directories; a third
 * directory installs the team guard (a crontab of the test's own, helpers/crontab.ts), which registers its key with
 * the org once. Every up from then on puts that key on the VMs it makes, and only those: the guard's key logs in to
 * a VM made after it, not to one made before. guard status lists which VMs each guard covers, and which none does.
 */
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {tempDir, writeConfigFile} from '../helpers/cli.js'
import {fakeCrontab} from '../helpers/crontab.js'
import {useVmFixture} from '../helpers/fixture.js'
import {DEFAULT_TOKEN} from '../simulator/simulator.js'

const simulated = useVmFixture({inProcess: true})
const {targon} = simulated

const NO_GUARD =
  'no guard covers the VMs this run made, so nothing enforces --ttl: run targon guard install --team on an always-on machine (or targon guard install --cron here)'

/** Whether `key` logs in to the simulated VM of `uid` as ubuntu (spawned, not run synchronously: the farm relays in this process). */
function logsIn(uid: string, key: string): Promise<boolean> {
  const args = [
    ...['-i', key, '-p', String(simulated.farm.vm(uid).port)],
    ...['-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'],
    ...['-o', 'ConnectTimeout=20', 'ubuntu@127.0.0.1', 'true'],
  ]
  return new Promise((resolve) => spawn('ssh', args, {stdio: 'ignore'}).on('close', (code) => resolve(code === 0)))
}

describe('the team guard', () => {
  it('registers one key; VMs made after it carry it and take it, VMs made before do not; guard status says which', async () => {
    const dirs = {alice: tempDir('targon-alice-'), bob: tempDir('targon-bob-'), guard: tempDir('targon-team-')}
    writeConfigFile(dirs.guard, {'api-key': DEFAULT_TOKEN, 'api-url': simulated.sim.url})
    const upAs = async (who: 'alice' | 'bob') => {
      const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '1h', '--json'], {
        config: dirs[who],
        env: {TARGON_OWNER: who},
      })
      expect(up.code, up.stdout + up.stderr).toBe(0)
      return up.json
    }

    const before = await upAs('alice')
    expect(before.data.guard_keys).toEqual([])
    expect(before.warnings).toContain(NO_GUARD)
    const bob = await upAs('bob')

    // VMs of two owners and no owner set: a guard of this directory would be refused; the team guard takes them all.
    const crontab = fakeCrontab()
    const installed = await targon(['guard', 'install', '--team', '--cron', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(installed.code, installed.stdout + installed.stderr).toBe(0)
    const key = installed.json.data.guard_key
    expect(key.name).toMatch(/^targon-guard-[0-9a-f]{8}$/)
    expect(installed.json.data.installed).toMatchObject({owner: null, team: true})
    const [marker, entry] = readFileSync(crontab.file, 'utf8').trim().split('\n') as [string, string]
    expect(marker).toContain(`dir=${dirs.guard} team (`)
    expect(entry).toContain(' sweep --profile default --guard --team --json ')
    expect([...simulated.sim.sshKeys.values()].filter((each) => each.name.startsWith('targon-guard-'))).toHaveLength(1)

    const after = await upAs('alice')
    expect(after.data.guard_keys).toEqual([key])
    expect(after.warnings.join('\n')).not.toContain('no guard covers')
    const [old, made] = [before.data.vms[0].uid as string, after.data.vms[0].uid as string]
    expect(simulated.sim.current(made)?.ssh_keys).toContain(key.uid)
    expect(simulated.sim.current(old)?.ssh_keys).not.toContain(key.uid)
    const guardKey = join(dirs.guard, 'keys', 'guard_ed25519')
    expect(await logsIn(made, guardKey)).toBe(true)
    expect(await logsIn(old, guardKey)).toBe(false)

    const status = await targon(['guard', 'status', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(status.code, status.stdout).toBe(0)
    expect(status.json.data.guards).toMatchObject([{kind: 'cron', team: true}])
    const coverage = status.json.data.coverage
    expect(coverage.guards).toEqual([{here: true, key, kind: 'team', owner: null, vms: [expect.objectContaining({uid: made})]}])
    expect(coverage.not_covered.map((vm: {uid: string}) => vm.uid).sort()).toEqual([old, bob.data.vms[0].uid].sort())
    expect(coverage.unknown).toEqual([])
    const text = await targon(['guard', 'status'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(text.stdout).toContain(`team guard ${key.name} (this directory): 1 VM (${after.data.vms[0].name})`)
    expect(text.stdout).toMatch(/not covered: 2 VMs/)

    // From alice's directory, which has no guard of its own: the team guard is seen by its key.
    const fromAlice = await targon(['guard', 'status', '--json'], {config: dirs.alice, env: {PATH: crontab.path, TARGON_OWNER: 'alice'}})
    expect(fromAlice.json.data.coverage.guards).toMatchObject([{here: false, key, kind: 'team', vms: [{uid: made}]}])

    // A second team guard for the org on this machine is refused, with the command that removes the first; no key is added.
    const other = tempDir('targon-team-')
    writeConfigFile(other, {'api-key': DEFAULT_TOKEN, 'api-url': simulated.sim.url})
    const second = await targon(['guard', 'install', '--team', '--cron', '--json'], {config: other, env: {PATH: crontab.path}})
    expect(second.code, second.stdout).toBe(3)
    expect(second.json.error).toMatchObject({
      hint: `remove it first: TARGON_CONFIG_DIR=${dirs.guard} targon guard uninstall --profile default`,
      message: expect.stringContaining('the team guard of org'),
    })
    expect([...simulated.sim.sshKeys.values()].filter((each) => each.name.startsWith('targon-guard-'))).toHaveLength(1)

    // Uninstalled, the team guard's key leaves the org: the next up adds it to nothing, and nothing counts as covered.
    simulated.sim.inject({method: 'DELETE', path: '/ssh-keys/', status: 503, times: 1})
    const failed = await targon(['guard', 'uninstall', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(failed.code, failed.stdout).toBe(0)
    expect(failed.json.data).toMatchObject({guard_key_removed: null, removed: [{kind: 'cron', team: true}]})
    expect(failed.json.warnings.join('\n')).toContain("the team guard's key could not be removed from org")
    expect(readFileSync(crontab.file, 'utf8').trim()).toBe('')
    const again = await targon(['guard', 'install', '--team', '--cron', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(again.code, again.stdout).toBe(0)
    expect(again.json.data.guard_key).toEqual(key)
    const removed = await targon(['guard', 'uninstall', '--json'], {config: dirs.guard, env: {PATH: crontab.path}})
    expect(removed.json.data).toMatchObject({guard_key_removed: {name: key.name}, removed: [{kind: 'cron', team: true}]})
    expect(removed.json.warnings.join('\n')).not.toContain("the team guard's key")
    expect([...simulated.sim.sshKeys.values()].filter((each) => each.name.startsWith('targon-guard-'))).toEqual([])
    expect(readFileSync(crontab.file, 'utf8').trim()).toBe('')
    const uncovered = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {config: dirs.alice})
    expect(uncovered.json.data.guard_keys).toEqual([])
    expect((await targon(['down', uncovered.json.data.vms[0].uid, '--json'], {config: dirs.alice})).code).toBe(0)
  })
})
