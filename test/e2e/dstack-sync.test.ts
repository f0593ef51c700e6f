/**
 * targon keeps a dstack fleet in sync (simulated VMs and the dstack double): up --dstack puts the new VMs into
 * dstack's fleet targon-<fleet> (and says so in its result), status shows each VM's dstack state, a sync with nothing to change applies nothing, down takes a VM out of dstack before
 * Targon's DELETE and leaves the other working, and a host running a dstack job is deleted only with --force, which
 * says so; the next sync empties what is left.
 */
import {describe, expect, it} from 'vitest'

import {DSTACK_TOKEN, useDstack} from '../helpers/dstack.js'
import {useVmFixture} from '../helpers/fixture.js'

/** The simulated VMs share 127.0.0.1: each gets its own name by the pattern, as sslip.io would resolve it. */
const dstackEnv = () => ({
  TARGON_DSTACK_HOST_PATTERN: '{uid}.{ip}.sslip.io',
  TARGON_DSTACK_PROJECT: 'main',
  TARGON_DSTACK_TOKEN: DSTACK_TOKEN,
  TARGON_DSTACK_URL: dstack.current.url,
})
const simulated = useVmFixture({
  inProcess: true,
  defaults: {timeoutMs: 120_000},
  env: () => ({TARGON_SHIM_HEALTH_TIMEOUT: '4', ...dstackEnv()}),
})
const {targon} = simulated
const dstack = useDstack()
const FLEET = 'targon-default'

const hostOf = (uid: string) => `${uid.toLowerCase()}.127.0.0.1.sslip.io`
const held = () => dstack.current.hosts(FLEET).map((host) => host.hostname)

describe('targon dstack sync', () => {
  it('keeps dstack fleet targon-default equal to the ready VMs through up --dstack, sync and down', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '2', '--dstack', '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const [busy, idle] = up.json.data.vms as {uid: string; name: string}[]
    if (!busy || !idle) throw new Error('two VMs expected')
    expect(held().sort()).toEqual([hostOf(busy.uid), hostOf(idle.uid)].sort())
    expect(up.json.data.dstack_sync).toMatchObject({action: 'created', dstack_fleet: FLEET, removed: []})
    expect(up.json.data.dstack_sync.added).toHaveLength(2)

    // Shared IPs without a pattern: refused, naming the fix.
    const shared = await targon(['dstack', 'sync', '--fleet', 'default', '--json'], {env: {TARGON_DSTACK_HOST_PATTERN: undefined}})
    expect(shared.code).toBe(3)
    expect(shared.json.error.hint).toContain('dstack-host-pattern')

    const applies = dstack.current.requests('/apply').length
    const again = await targon(['dstack', 'sync', '--fleet', 'default', '--json'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.json.data).toMatchObject({action: 'unchanged', added: [], removed: [], requests: 1})
    expect(dstack.current.requests('/apply')).toHaveLength(applies)

    const run = dstack.current.submitRun({fleets: [FLEET]})
    dstack.current.placeRun(run.name, {fleet: FLEET, hostname: hostOf(busy.uid)})

    // status reads dstack's fleets once: each VM's dstack state.
    const listsBefore = dstack.current.requests('/fleets/list').length
    const status = await targon(['status', '--json'])
    expect(status.code, status.stderr).toBe(0)
    const stateOf = (json: typeof status.json, uid: string) =>
      (json.data.vms as {uid: string; dstack_state: string | null}[]).find((vm) => vm.uid === uid)?.dstack_state
    expect(stateOf(status.json, busy.uid)).toBe('busy')
    expect(stateOf(status.json, idle.uid)).toBe('in-fleet')
    expect(dstack.current.requests('/fleets/list')).toHaveLength(listsBefore + 1)
    const table = await targon(['status'])
    expect(table.stdout).toMatch(/DSTACK/)
    expect(table.stdout).toMatch(/busy/)
    // dstack unreachable: unknown, a warning, and status succeeds.
    const unreachable = await targon(['status', '--json'], {env: {TARGON_DSTACK_URL: 'http://127.0.0.1:9'}})
    expect(unreachable.code, unreachable.stderr).toBe(0)
    expect(stateOf(unreachable.json, busy.uid)).toBe('unknown')
    expect(unreachable.json.warnings.join('\n')).toContain('dstack state unknown')
    // The guard's sweep deletes nothing here, and says how its sync of the dstack fleet went.
    const sweep = await targon(['sweep', '--json'])
    expect(sweep.code, sweep.stderr).toBe(0)
    expect(sweep.json.data.dstack_sync).toEqual({
      error: null,
      fleets: [
        {
          action: 'unchanged',
          added: 0,
          busy: 0,
          dstack_fleet: FLEET,
          error: null,
          fleet: 'default',
          removed: 0,
          requests: 1,
          retries: 0,
          unchanged: 2,
        },
      ],
    })
    // Without dstack (none of its settings): no state, no column.
    const without = await targon(['status', '--json'], {env: Object.fromEntries(Object.keys(dstackEnv()).map((key) => [key, undefined]))})
    expect(stateOf(without.json, busy.uid)).toBeNull()

    // down of the idle VM: out of dstack first, then Targon's DELETE; the busy one keeps working.
    const down = await targon(['down', idle.name, '--json'])
    expect(down.code, down.stderr).toBe(0)
    expect(down.json.data.results).toMatchObject([{dstack: 'removed', uid: idle.uid}])
    const removed = dstack.current.requests('/delete_instances').at(-1)
    const deleted = simulated.sim.requests('DELETE', idle.uid)[0]
    expect(removed?.status).toBe(200)
    expect(removed && deleted && removed.at <= deleted.at).toBe(true)
    expect(held()).toEqual([hostOf(busy.uid)])
    expect(dstack.current.run(run.name)?.status).toBe('running')
    expect(simulated.sim.billing().map((workload) => workload.uid)).toEqual([busy.uid])

    // A host with a dstack job: --force deletes it at once, and says so; the next sync repairs dstack's fleet.
    const forced = await targon(['down', busy.name, '--force', '--json'])
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.json.warnings.join('\n')).toContain('runs a dstack job: deleting it all the same (--force)')
    expect(forced.json.data.results).toMatchObject([{dstack: 'busy-forced', uid: busy.uid}])
    expect(simulated.sim.billing()).toEqual([])
    dstack.current.finishRun(run.name, 'failed')
    const repaired = await targon(['dstack', 'sync', '--fleet', 'default', '--json'])
    expect(repaired.code, repaired.stderr).toBe(0)
    // down's delete_instances leaves the host in the fleet's spec: the sync takes both out of it.
    expect(repaired.json.data.removed.map((host: {hostname: string}) => host.hostname)).toContain(hostOf(busy.uid))
    expect(held()).toEqual([])
  }, 240_000)
})
