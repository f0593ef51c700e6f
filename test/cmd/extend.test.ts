/**
 * targon extend against the simulator: a TTL moves from the later of now and its deadline, a lapsed TTL gets the
 * full duration and the sweep keeps the VM, a budget is raised, and another owner's VM is refused unless --any-owner.
 */
import {describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {setTtl} from '../helpers/records.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const HOUR = 3_600_000

async function upOne(...extra: string[]): Promise<{name: string; uid: string; ttl_expires_at: string | null}> {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json', ...extra])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

describe('targon extend', () => {
  it('moves a TTL from the later of now and its deadline, holds off idleness, raises a budget; the sweep keeps the VM', async () => {
    await ctx.setup()
    const vm = await upOne('--ttl', '1h', '--max-cost', '5')
    const deadline = Date.now() + HOUR / 2
    setTtl(ctx.configDir, vm.name, deadline)
    const before = Date.now()
    const extend = await targon(['extend', vm.name, '--by', '2h', '--max-cost', '40', '--json'])
    expect(extend.code, extend.stdout + extend.stderr).toBe(0)
    const [moved] = parseJson(extend).data.vms
    expect(Date.parse(moved.ttl_expires_at)).toBe(deadline + 2 * HOUR)
    expect(Date.parse(moved.idle_hold_until)).toBeGreaterThanOrEqual(before + 2 * HOUR)
    expect(moved.max_cost_usd).toBe(40)
    // 40 USD at 1.69 USD/h: about 23.7 h after creation.
    expect(Date.parse(moved.budget_ends_at) - Date.now()).toBeGreaterThan(23 * HOUR)

    // A TTL that lapsed gets the full duration from now, and the next sweep keeps the VM.
    setTtl(ctx.configDir, vm.name, Date.now() - 10 * 60_000)
    const lapsed = await targon(['extend', vm.name, '--by', '1h', '--ttl-only', '--json'])
    const [renewed] = parseJson(lapsed).data.vms
    expect(Math.abs(Date.parse(renewed.ttl_expires_at) - (Date.now() + HOUR))).toBeLessThan(30_000)
    const sweep = await targon(['sweep', '--json'])
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    expect(parseJson(sweep).data.results).toEqual([])
    expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([vm.uid])

    const table = await targon(['extend', vm.name, '--by', '30m'])
    expect(table.code).toBe(0)
    expect(table.stdout).toContain('IDLE_HELD_UNTIL')
  })

  it('status shows what ends each VM and that no guard covers the directory; up says once that no guard enforces its limit', async () => {
    await ctx.setup()
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '1h', '--max-cost', '5', '--json'])
    expect(up.code, up.stderr).toBe(0)
    const warnings = parseJson(up).warnings.filter((each: string) => each.includes('no guard covers'))
    expect(warnings).toEqual([
      'no guard covers the VMs this run made, so nothing enforces --ttl, --max-cost: run targon guard install --team on an always-on machine (or targon guard install --cron here)',
    ])
    const limited = parseJson(up).data.vms[0]
    const free = await upOne()
    const status = await targon(['status', '--json'])
    const vms = new Map(parseJson(status).data.vms.map((vm: {uid: string; ends_by: string}) => [vm.uid, vm.ends_by]))
    expect(vms.get(limited.uid)).toBe(`TTL ${limited.ttl_expires_at.slice(11, 16)}Z, cost 0.00/5.00`)
    expect(vms.get(free.uid)).toBe('no limit')
    expect(parseJson(status).data.guard).toEqual({every_seconds: null, kind: null, last_exit_code: null, last_run_at: null})
    const text = await targon(['status'])
    expect(text.stdout).toContain('ENDS_BY')
    expect(text.stderr).toContain(
      'No guard on this machine enforces the limits of this directory: targon guard install --cron here, or targon guard install --team on an always-on machine',
    )
  })

  it('status shows the configured idle limit in ENDS_BY for a VM without its own, as the sweep applies it', async () => {
    await ctx.setup()
    const free = await upOne()
    const before = await targon(['sweep', '--dry-run', '--json'])
    expect(parseJson(before).data.unlimited).toMatchObject([{uid: free.uid}])
    expect((await targon(['config', 'set', 'idle-limit', '45m'])).code).toBe(0)
    const status = await targon(['status', '--json'])
    expect(parseJson(status).data.vms).toMatchObject([{ends_by: 'idle ?/45m', uid: free.uid}])
    // The sweep covers it by the same limit: nothing is reported as unlimited.
    const sweep = await targon(['sweep', '--dry-run', '--json'])
    expect(parseJson(sweep).data.unlimited).toEqual([])
  })

  it("refuses a name that matches nothing (exit 4) and another owner's VM (exit 2) unless --any-owner", async () => {
    await ctx.setup()
    const alices = await upOne('--ttl', '1h')
    expect((await targon(['extend', 'no-such-vm', '--by', '1h'])).code).toBe(4)
    const asBob = await targon(['extend', alices.uid, '--by', '1h', '--json'], {env: {TARGON_OWNER: 'bob'}})
    // Made without an owner: nobody's, so bob may extend it; an owner's VM is another matter.
    expect(asBob.code, asBob.stdout).toBe(0)
    const alice = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--ttl', '1h', '--json'], {
      env: {TARGON_OWNER: 'alice'},
    })
    expect(alice.code, alice.stderr).toBe(0)
    const hers = parseJson(alice).data.vms[0]
    const refused = await targon(['extend', hers.uid, '--by', '1h', '--json'], {env: {TARGON_OWNER: 'bob'}})
    expect(refused.code).toBe(2)
    expect(parseJson(refused).error.message).toBe(`${hers.name} belongs to owner alice`)
    const forced = await targon(['extend', hers.uid, '--by', '1h', '--any-owner', '--json'], {env: {TARGON_OWNER: 'bob'}})
    expect(forced.code, forced.stdout).toBe(0)
    // Nothing to extend by: refused before anything is read.
    const none = await targon(['extend', hers.name, '--json'])
    expect(none.code).toBe(2)
    expect(parseJson(none).error.message).toBe('nothing to extend')
    // A --fleet that names no fleet is refused as on every command, not taken for a label that matches nothing.
    const badFleet = await targon(['extend', alices.name, '--by', '1h', '--fleet', 'Not A Fleet', '--json'])
    expect(badFleet.code, badFleet.stdout).toBe(2)
    expect(parseJson(badFleet).error.message).toBe('fleet "Not A Fleet" is not valid')
  })

  it('refuses a VM whose owner could not be read (exit 2) unless --any-owner', async () => {
    await ctx.setup({summaryProjectId: false})
    const vm = await upOne('--ttl', '1h')
    // The listing leaves project_id out, and the full read of the VM fails: its owner is unknown.
    ctx.sim.inject({method: 'GET', path: new RegExp(`/workloads/${vm.uid}$`), status: 500})
    const refused = await targon(['extend', vm.name, '--by', '1h', '--json'])
    expect(refused.code, refused.stdout).toBe(2)
    expect(parseJson(refused).error).toMatchObject({
      hint: 'try again, or pass --any-owner to extend it all the same',
      message: `the owner of ${vm.name} could not be read`,
    })
    const forced = await targon(['extend', vm.name, '--by', '1h', '--any-owner', '--json'])
    expect(forced.code, forced.stdout).toBe(0)
  })

  it('raises a budget, never lowers one (exit 2), and sets one where there was none', async () => {
    await ctx.setup()
    const vm = await upOne('--max-cost', '5')
    const lower = await targon(['extend', vm.name, '--max-cost', '4', '--json'])
    expect(lower.code, lower.stdout).toBe(2)
    expect(parseJson(lower).error.message).toBe(`--max-cost 4 is below the budget of ${vm.name} (5 USD)`)
    const same = await targon(['extend', vm.name, '--max-cost', '5', '--json'])
    expect(same.code, same.stdout).toBe(0)
    const raised = await targon(['extend', vm.name, '--max-cost', '8', '--json'])
    expect(parseJson(raised).data.vms[0].max_cost_usd).toBe(8)
    const free = await upOne()
    const set = await targon(['extend', free.name, '--max-cost', '3', '--json'])
    expect(set.code, set.stdout).toBe(0)
    expect(parseJson(set).data.vms[0].max_cost_usd).toBe(3)
  })

  it('--ttl-only warns of each VM without a TTL, and exits 2 when none has one', async () => {
    await ctx.setup()
    const timed = await upOne('--ttl', '1h')
    const free = await upOne()
    const both = await targon(['extend', timed.name, free.name, '--by', '1h', '--ttl-only', '--json'])
    expect(both.code, both.stdout).toBe(0)
    expect(parseJson(both).warnings).toContain(`${free.name} has no TTL: --ttl-only leaves it as it was`)
    expect(parseJson(both).data.vms.map((each: {ttl_expires_at: string | null}) => each.ttl_expires_at === null)).toEqual([false, true])
    const none = await targon(['extend', free.name, '--by', '1h', '--ttl-only'])
    expect(none.code).toBe(2)
    expect(none.stderr.trim().split('\n').slice(-1)).toEqual([
      `Error: ${free.name} has no TTL to move. Hint: drop --ttl-only to hold off the idle deletion, or set a TTL with targon up --name NAME --ttl DURATION`,
    ])
  })
})
