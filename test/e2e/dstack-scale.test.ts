/**
 * targon dstack scale (simulated VMs and the dstack double): a run that waits for capacity gets one VM, bootstrapped
 * and in dstack's fleet targon-default, which dstack then runs it on; nothing is rented while a host is idle in
 * dstack, above --max, or above the price cap; once the run has ended and the host stays idle past --idle, the next
 * scale takes it out of dstack, then deletes it, and nothing bills.
 */
import {describe, expect, it} from 'vitest'

import {DSTACK_TOKEN, useDstack} from '../helpers/dstack.js'
import {useVmFixture} from '../helpers/fixture.js'
import {idlePast} from '../helpers/idle-clock.js'

const simulated = useVmFixture({inProcess: true, env: {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
const dstack = useDstack()
const FLEET = 'targon-default'
const IDLE_S = 3

/** The simulated VMs share 127.0.0.1: each gets its own name by the pattern, as sslip.io would resolve it. */
const env = () => ({
  TARGON_DSTACK_HOST_PATTERN: '{uid}.{ip}.sslip.io',
  TARGON_DSTACK_PROJECT: 'main',
  TARGON_DSTACK_TOKEN: DSTACK_TOKEN,
  TARGON_DSTACK_URL: dstack.current.url,
})
/** One scale pass; `flags` replaces the defaults of --max-price and --max, or adds --dry-run. */
const scale = (flags: Record<string, string | true> = {}) => {
  const all: Record<string, string | true> = {'--max': '2', '--max-price': '1.8', ...flags}
  const args = Object.entries(all).flatMap(([flag, value]) => (value === true ? [flag] : [flag, value]))
  return simulated.targon(
    ['dstack', 'scale', '--fleet', 'default', '--offer', 'rtx6000b-small', '--idle', `${IDLE_S}s`, '--json', ...args],
    {
      env: env(),
      timeoutMs: 120_000,
    },
  )
}
const hostOf = (uid: string) => `${uid.toLowerCase()}.127.0.0.1.sslip.io`
const held = () => dstack.current.hosts(FLEET).map((host) => host.hostname)
const billing = () => simulated.sim.billing().map((workload) => workload.uid)

describe('targon dstack scale', () => {
  it('rents a VM for a waiting run, and deletes it, out of dstack first, once dstack leaves it idle', async () => {
    const nothing = await scale()
    expect(nothing.code, nothing.stderr).toBe(0)
    expect(nothing.json.data).toMatchObject({nothing_done: {reason: 'no-waiting-runs'}, rent: 0, rented: [], waiting_runs: []})

    const text = await simulated.targon(
      ['dstack', 'scale', '--fleet', 'default', '--offer', 'rtx6000b-small', '--max-price', '1.8', '--max', '2'],
      {env: env()},
    )
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).toBe('')
    expect(text.stderr).toContain('nothing to do: no dstack run waits for capacity')
    expect(text.stderr).toContain('limits of the VMs it rents: --ttl 24h, --idle 30m')

    const run = dstack.current.submitRun({name: 'train'})
    // Above the price cap: refused, nothing rented.
    const capped = await scale({'--max-price': '0.5'})
    expect(capped.code, capped.stderr).toBe(9)
    expect(billing()).toEqual([])

    const dry = await scale({'--dry-run': true})
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.json.data).toMatchObject({
      dry_run: true,
      plan: {count: 1, max_price: 1.8, vms: [{offer: {resource: 'rtx6000b-small'}}]},
      rent: 1,
      rented: [],
    })
    expect(dry.json.data.plan.limits).toMatchObject({idle_limit_seconds: IDLE_S, shim: true, ttl_seconds: 24 * 3600})
    expect(billing()).toEqual([])

    const rented = await scale()
    expect(rented.code, rented.stdout + rented.stderr).toBe(0)
    const data = rented.json.data
    expect(data).toMatchObject({nothing_done: null, rent: 1, synced: true, waiting_runs: [{name: 'train', why: 'no-capacity'}]})
    expect(data.limits).toEqual({idle_limit_seconds: IDLE_S, max_cost_usd: null, ttl_seconds: 24 * 3600})
    const [vm] = data.rented as {uid: string; name: string}[]
    if (!vm) throw new Error('one rented VM expected')
    expect(billing()).toEqual([vm.uid])
    // Bootstrapped as up does, with its limits written on the VM, and in dstack's fleet.
    const limits = JSON.parse(simulated.farm.vm(vm.uid).readFile('/etc/targon-fleet/limits.json'))
    expect(limits).toMatchObject({idle_limit_seconds: IDLE_S, ttl_expires_at: expect.any(String)})
    expect(held()).toEqual([hostOf(vm.uid)])

    // A host idle in dstack is capacity: another waiting run rents nothing.
    dstack.current.submitRun({name: 'second'})
    const idleHost = await scale()
    expect(idleHost.json.data).toMatchObject({nothing_done: {reason: 'idle-host'}, rent: 0, removed: []})

    dstack.current.placeRun(run.name, {fleet: FLEET, hostname: hostOf(vm.uid)})
    // The fleet is at --max 1: the second run gets nothing.
    const atMax = await scale({'--max': '1'})
    expect(atMax.json.data).toMatchObject({hosts: {busy: 1}, nothing_done: {reason: 'at-max'}, rent: 0})
    expect(billing()).toEqual([vm.uid])

    dstack.current.finishRun('second', 'stopped')
    dstack.current.finishRun(run.name)
    // A whole sample past the limit: the probe reads the clock in seconds.
    await idlePast(simulated.farm, vm.uid, IDLE_S + 1)
    const removed = await scale()
    expect(removed.code, removed.stdout + removed.stderr).toBe(0)
    expect(removed.json.data).toMatchObject({removed: [{action: 'deleted', billing: false, uid: vm.uid}], rent: 0})
    const out = dstack.current.requests('/delete_instances').at(-1)
    const deleted = simulated.sim.requests('DELETE', vm.uid)[0]
    expect(out?.status).toBe(200)
    expect(out && deleted && out.at <= deleted.at).toBe(true)
    expect(held()).toEqual([])
    expect(billing()).toEqual([])
  }, 300_000)
})
