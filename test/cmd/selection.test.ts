/**
 * Which VMs a name, a label and --fleet select, in every command that takes them: with names, --fleet only says
 * which fleet their labels belong to; without, it selects the whole fleet. A never-deployed leftover of an
 * `up --name` race does not make its name ambiguous.
 */
import {describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import type {TargonSimulator} from '../simulator/simulator.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx

async function setup(): Promise<TargonSimulator> {
  await ctx.setup()
  return ctx.sim
}

const planned = async (args: string[]) => {
  const result = await targon([...args, '--dry-run', '--json'])
  expect(result.code, result.stdout).toBe(0)
  return (parseJson(result).data.results as {name: string}[]).map((each) => each.name).sort()
}

describe('down: names and --fleet', () => {
  it('deletes only the named VM when --fleet names the fleet of its label', async () => {
    const sim = await setup()
    for (const name of ['tcli-exp-inst', 'tcli-exp-a', 'tcli-exp-b', 'tcli-default-inst']) sim.addWorkload({name, status: 'running'})
    expect(await planned(['down', 'inst', '--fleet', 'exp'])).toEqual(['tcli-exp-inst'])
    expect(await planned(['down', 'tcli-exp-inst', '--fleet', 'exp'])).toEqual(['tcli-exp-inst'])
    expect(await planned(['down', 'inst'])).toEqual(['tcli-default-inst'])
    expect(await planned(['down', '--fleet', 'exp'])).toEqual(['tcli-exp-a', 'tcli-exp-b', 'tcli-exp-inst'])

    const deleted = await targon(['down', 'inst', '--fleet', 'exp', '--json'])
    expect(deleted.code, deleted.stdout).toBe(0)
    expect(
      sim
        .billing()
        .map((workload) => workload.name)
        .sort(),
    ).toEqual(['tcli-default-inst', 'tcli-exp-a', 'tcli-exp-b'])
  })

  for (const selector of [['--all'], ['--expired'], ['--older-than', '1h'], ['--over-cost', '5']]) {
    it(`refuses names combined with ${selector[0]} (exit 2), before any request`, async () => {
      const sim = await setup()
      sim.addWorkload({name: 'tcli-default-inst', status: 'running'})
      const result = await targon(['down', 'inst', ...selector, '--json'])
      expect(result.code).toBe(2)
      expect(parseJson(result).error.message).toContain('cannot be combined')
      expect(sim.log).toEqual([])
      expect(sim.billing()).toHaveLength(1)
    })
  }
})

describe('a registered leftover of an up --name race', () => {
  it('does not make the name ambiguous for down, logs or up --name; down --all still reports it', async () => {
    const sim = await setup()
    const first = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'twin', '--no-bootstrap', '--json'])
    expect(first.code, first.stdout).toBe(0)
    const live = parseJson(first).data.vms[0] as {uid: string}
    // The race's loser, from another config directory: its workload stays registered.
    const leftover = sim.addWorkload({name: 'tcli-default-twin', status: 'registered'})

    expect(await planned(['down', 'twin'])).toEqual(['tcli-default-twin'])
    const plan = parseJson(await targon(['down', 'twin', '--dry-run', '--json'])).data.results
    expect(plan.map((each: {uid: string}) => each.uid)).toEqual([live.uid])
    expect((await targon(['logs', 'twin'])).code).toBe(0)

    const adopted = await targon(['up', '--name', 'twin', '--no-bootstrap', '--json'])
    expect(adopted.code, adopted.stdout).toBe(0)
    expect(parseJson(adopted).data.vms).toMatchObject([{adopted: true, uid: live.uid}])
    // No cap is needed to adopt; the run says that the price goes unchecked.
    expect(parseJson(adopted).warnings).toEqual(['no price cap: the price of twin is not checked against one'])

    const all = await targon(['down', '--all', '--json'])
    expect(all.code, all.stdout).toBe(0)
    const results = parseJson(all).data.results as {uid: string; action: string}[]
    expect(results.find((each) => each.uid === leftover.uid)?.action).toBe('left-registered')
    expect(sim.billing()).toEqual([])
  })
})

describe('down in text mode', () => {
  it('prints the per-VM results when something still bills (exit 11), not only the error', async () => {
    const sim = await setup()
    const vm = sim.addWorkload({name: 'tcli-default-stuck', status: 'suspended'})
    // Waking it to delete it is refused: it keeps billing.
    sim.inject({method: 'POST', path: '/deploy', status: 402})
    const result = await targon(['down', 'stuck'])
    expect(result.code, result.stderr).toBe(11)
    expect(result.stdout.split('\n')[0]).toBe('NAME\tUID\tRESULT\tBILLING')
    expect(result.stdout).toContain(`tcli-default-stuck\t${vm.uid}\t`)
    expect(result.stdout).toMatch(/\tyes$/m)
  })
})

describe('a name that matches nothing', () => {
  it('gets a suggestion among the names and labels it could mean, in down, status and ssh; none when nothing is close', async () => {
    const sim = await setup()
    for (const name of ['tcli-train-worker1', 'tcli-default-k3v9x2qa']) sim.addWorkload({name, status: 'running'})
    const hint = async (args: string[]) => {
      const result = await targon([...args, '--json'])
      expect(result.code, result.stdout).toBe(4)
      return parseJson(result).error.hint as string
    }
    expect(await hint(['down', 'workr1', '--fleet', 'train'])).toMatch(/^did you mean worker1\? Else check the name/)
    expect(await hint(['down', 'tcli-default-k3v9x2qb'])).toMatch(/^did you mean tcli-default-k3v9x2qa\?/)
    expect(await hint(['status', 'tcli-train-wroker1'])).toMatch(/^did you mean tcli-train-worker1\?/)
    expect(await hint(['ssh', 'k3v9x2q'])).toMatch(/^did you mean k3v9x2qa\?/)
    expect(await hint(['down', 'something-else'])).not.toContain('did you mean')
    expect(sim.requests('DELETE', '/workloads')).toEqual([])
  })
})
