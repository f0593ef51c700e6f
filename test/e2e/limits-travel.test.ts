/**
 * Limits that travel with the VM, on a simulated VM (real sshd): up writes them into the file the VM carries, every
 * directory that can reach the VM reads it, and the stricter of the file and a local record wins. A VM may tighten its
 * limits, never loosen them: a file rewritten to "no limit", or one that fails the checks, changes nothing of what the
 * record says; a directory that knows neither shows the limits as unknown, never as none.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {setTtl} from '../helpers/records.js'

const simulated = useVmFixture({inProcess: true, env: {TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
const {configDir, targon} = simulated
const HOUR = 3_600_000
let vm: {name: string; uid: string}

const live = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

/** Writes the VM's limits file as root on the VM: what a user (or a hostile process) with sudo there could do. */
async function rewriteOnVm(text: string): Promise<void> {
  const encoded = Buffer.from(text).toString('base64')
  const written = await targon([
    'exec',
    '--vms',
    vm.name,
    '--',
    `echo ${encoded} | base64 -d | sudo tee /etc/targon-fleet/limits.json >/dev/null`,
  ])
  expect(written.code, written.stderr).toBe(0)
}

async function statusOf(config?: string): Promise<Record<string, any>> {
  const status = await targon(['status', '--json', vm.name], {config})
  expect(status.code, status.stderr).toBe(0)
  return status.json.data.vms[0]
}

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--ttl', '2h', '--max-cost', '5', '--idle', '30m', '--json'], {
    timeoutMs: 120_000,
  })
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vm = up.json.data.vms[0]
}, 150_000)

afterAll(async () => {
  await targon(['down', '--all', '--yes', '--no-hooks'])
})

describe('limits that travel with the VM', () => {
  it('up writes them on the VM, root-owned, and status reads them back: both sources agree', async () => {
    const shown = await targon([
      'exec',
      '--vms',
      vm.name,
      '--',
      'stat -c %U:%a /etc/targon-fleet/limits.json; cat /etc/targon-fleet/limits.json',
    ])
    expect(shown.code, shown.stderr).toBe(0)
    const [owner, ...file] = shown.stdout.replace(`${vm.name} | `, '').split('\n')
    expect(owner).toBe('root:644')
    const carried = JSON.parse(file.join('\n').replaceAll(`${vm.name} | `, ''))
    expect(carried).toMatchObject({idle_limit_seconds: 1800, max_cost_usd: 5, on_delete_hook: false, version: 1})
    const status = await statusOf()
    expect(status).toMatchObject({limits_source: 'both', max_cost_usd: 5, vm_limits: 'read'})
    expect(status.ttl_expires_at).toBe(carried.ttl_expires_at)
  })

  it('a VM may tighten its limits: an earlier deadline and a lower budget on the VM win', async () => {
    const soon = new Date(Date.now() + 10 * 60_000).toISOString()
    await rewriteOnVm(
      JSON.stringify({
        down_jobs: [],
        idle_hold_until: null,
        idle_limit_seconds: 1800,
        max_cost_usd: 1,
        on_delete_hook: false,
        owner: null,
        ttl_expires_at: soon,
        version: 1,
        written_at: new Date().toISOString(),
      }),
    )
    const status = await statusOf()
    expect(status).toMatchObject({limits_source: 'both', max_cost_usd: 1, ttl_expires_at: soon})
    expect(status.ttl_left_seconds).toBeLessThanOrEqual(600)
  })

  it('another directory, with neither a record nor a key on the VM, shows its limits as unknown, never as none', async () => {
    const elsewhere = tempDir('targon-elsewhere-')
    const status = await statusOf(elsewhere)
    expect(status).toMatchObject({limits_source: null, local_record: 'missing', ttl_expires_at: null, vm_limits: 'not-read'})
    const text = await targon(['status', vm.name], {config: elsewhere})
    expect(text.stdout).toContain('limits unknown')
    expect(text.stdout).not.toContain('no limit')
  })

  it('a file that fails the checks is no limits at all: the record still holds, and says where they come from', async () => {
    await rewriteOnVm('{"version": 1, "ttl_expires_at": "whenever", "max_cost_usd": -1}')
    const status = await statusOf()
    expect(status).toMatchObject({limits_source: 'local', max_cost_usd: 5, vm_limits: 'malformed'})
    expect(status.vm_limits_problem).toContain('fails the checks')
  })

  it('a VM that rewrites its limits to "no limit" is still deleted at the deadline of the record, by its own directory', async () => {
    await rewriteOnVm(
      JSON.stringify({
        down_jobs: [],
        idle_hold_until: null,
        idle_limit_seconds: null,
        max_cost_usd: null,
        on_delete_hook: false,
        owner: null,
        ttl_expires_at: null,
        version: 1,
        written_at: new Date().toISOString(),
      }),
    )
    setTtl(configDir, vm.name, Date.now() - HOUR)
    const sweep = await targon(['sweep', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    expect(sweep.json.data.results).toMatchObject([{billing: false, reason: 'ttl', uid: vm.uid}])
    expect(live().has(vm.uid)).toBe(false)
  })
})
