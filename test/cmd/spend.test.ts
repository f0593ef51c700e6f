import {describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']
const HOUR = 3_600_000

function billingNames(): string[] {
  return ctx.sim
    .billing()
    .map((workload) => workload.name)
    .sort()
}

/** Makes a workload look created `ms` ago, as the API reports it. */
function age(uid: string, ms: number): void {
  ctx.sim.workloads.get(uid)!.created_at = new Date(Date.now() - ms).toISOString()
}

describe('spend caps', () => {
  it('up --max-cost records a budget; status shows what is left; down --expired deletes the VM that spent it', async () => {
    await ctx.setup()
    const spender = await targon([...UP, '--max-cost', '2', '--json'])
    expect(spender.code, spender.stderr).toBe(0)
    const big = parseJson(spender).data.vms[0]
    expect(big.max_cost_usd).toBe(2)
    const saver = parseJson(await targon([...UP, '--max-cost', '$10', '--json'])).data.vms[0]
    const free = parseJson(await targon([...UP, '--json'])).data.vms[0]
    expect(free.max_cost_usd).toBeNull()

    // 1.69 USD/h: 2 h cost about 3.38, over the budget of 2; 3 h about 5.07, within 10.
    age(big.uid, 2 * HOUR)
    age(saver.uid, 3 * HOUR)
    age(free.uid, 30 * HOUR)
    const status = await targon(['status', '--json'])
    expect(status.code, status.stderr).toBe(0)
    const vms = new Map(parseJson(status).data.vms.map((vm: {uid: string}) => [vm.uid, vm]))
    expect(vms.get(big.uid)).toMatchObject({budget_left_usd: expect.closeTo(2 - 3.38, 2), max_cost_usd: 2})
    expect(vms.get(saver.uid)).toMatchObject({budget_left_usd: expect.closeTo(10 - 5.07, 2), max_cost_usd: 10})
    expect(vms.get(free.uid)).toMatchObject({budget_left_usd: null, max_cost_usd: null})
    const table = await targon(['status'])
    expect(table.stdout).toContain('BUDGET_LEFT')
    expect(table.stdout).toMatch(/spent/)

    const down = await targon(['down', '--expired', '--json'])
    expect(down.code, down.stderr).toBe(0)
    expect(parseJson(down).data.results.map((result: {uid: string}) => result.uid)).toEqual([big.uid])
    expect(billingNames()).toEqual([free.name, saver.name].sort())
  })

  it('down --over-cost selects by estimated cost from the API alone, with no local state (cron from any machine)', async () => {
    await ctx.setup()
    const old = ctx.sim.addWorkload({created_at: new Date(Date.now() - 10 * HOUR).toISOString(), name: 'tcli-train-old', status: 'running'})
    const young = ctx.sim.addWorkload({created_at: new Date(Date.now() - HOUR).toISOString(), name: 'tcli-train-young', status: 'running'})
    const foreign = ctx.sim.addWorkload({
      created_at: new Date(Date.now() - 20 * HOUR).toISOString(),
      name: 'someone-else',
      status: 'running',
    })
    const elsewhere = tempDir('targon-config-')

    const dry = await targon(['down', '--over-cost', '5', '--dry-run', '--json'], {config: elsewhere})
    expect(dry.code, dry.stderr).toBe(0)
    expect(parseJson(dry).data.selection.over_cost_usd).toBe(5)
    expect(parseJson(dry).data.results.map((result: {uid: string}) => result.uid)).toEqual([old.uid])

    const down = await targon(['down', '--over-cost', '5', '--json'], {config: elsewhere})
    expect(down.code, down.stderr).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'deleted', billing: false, uid: old.uid}])
    expect(billingNames()).toEqual([foreign.name, young.name].sort())
  })

  it('refuses a bad budget or figure with one line and exit 2, before anything is rented', async () => {
    await ctx.setup()
    for (const args of [
      [...UP, '--max-cost', '0'],
      [...UP, '--max-cost', 'lots'],
      ['down', '--over-cost', '-3'],
      ['down', '--over-cost', 'abc'],
    ]) {
      const result = await targon(args)
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }

    expect(ctx.sim.requests('POST', '/workloads')).toEqual([])
    expect(ctx.sim.live()).toEqual([])
  })
})
