/**
 * What `status` selects and what its last line sums: without --fleet every fleet of the owner's (of this tool's, with
 * no owner set), --fleet narrows, and the last line sums what the whole org bills per hour by owner, other owners'
 * VMs and other tools' included, so that "No VMs" never hides VMs that bill.
 */
import {describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']
const ALICE = {env: {TARGON_OWNER: 'alice'}}

async function upUids(args: string[], options = ALICE): Promise<string[]> {
  const up = await targon([...UP, ...args], options)
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms.map((vm: {uid: string}) => vm.uid)
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1)

describe('targon status in a shared org', () => {
  it("shows every fleet of the owner's without --fleet, narrows with --fleet, and sums the org by owner last", async () => {
    await ctx.setup()
    const alices = await upUids(['--count', '2', '--fleet', 'train'])
    const [bobs] = await upUids([], {config: tempDir('targon-bob-'), env: {TARGON_OWNER: 'bob'}} as typeof ALICE)
    // Another tool's VM, and one the listing gives no price: both bill in the org.
    ctx.sim.addWorkload({cost_per_hour: 0.59, deployedAt: Date.now(), name: 'render-box', status: 'running'})
    ctx.sim.addWorkload({cost_per_hour: undefined, deployedAt: Date.now(), name: 'odd-box', status: 'running'})
    const orgLine = 'Org acme bills at least 5.66 USD/h: alice 3.38, bob 1.69, other tools 0.59 (1 VM of unknown price, not in the sum)'

    // Alice's two VMs in fleet train, though her configured fleet is default; bob's only in the sums.
    const status = await targon(['status', '--json'], ALICE)
    expect(status.code, status.stdout).toBe(0)
    const data = parseJson(status).data
    expect(data.fleet).toBeNull()
    expect(data.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual([...alices].sort())
    expect(data.org_billing).toEqual({
      billing_count: 5,
      by_owner: [
        {billing_count: 2, group: 'owner', owner: 'alice', price_per_hour: 3.38, unpriced_count: 0},
        {billing_count: 1, group: 'owner', owner: 'bob', price_per_hour: 1.69, unpriced_count: 0},
        {billing_count: 2, group: 'other-origin', owner: null, price_per_hour: 0.59, unpriced_count: 1},
      ],
      price_per_hour: 5.66,
      unknown_billing_count: 0,
      unpriced_count: 1,
    })

    const text = await targon(['status'], ALICE)
    expect(text.code, text.stderr).toBe(0)
    for (const uid of alices) expect(text.stdout).toContain(uid)
    expect(text.stdout).not.toContain(bobs)
    expect(lastLine(text.stderr)).toBe(orgLine)

    // --fleet narrows: none of hers in default, and the org line still follows.
    const narrowed = await targon(['status', '--fleet', 'default'], ALICE)
    expect(narrowed.code, narrowed.stderr).toBe(0)
    expect(narrowed.stdout).toBe('')
    expect(narrowed.stderr).toContain('No VMs of owner alice in fleet default (org acme).')
    expect(lastLine(narrowed.stderr)).toBe(orgLine)
    const narrowedJson = parseJson(await targon(['status', '--fleet', 'train', '--json'], ALICE)).data
    expect(narrowedJson.fleet).toBe('train')
    expect(narrowedJson.vms).toHaveLength(2)
    expect(narrowedJson.org_billing.price_per_hour).toBe(5.66)

    // With no owner set: every VM of this tool in every fleet, whoever rented it; the same sums.
    const anyone = parseJson(await targon(['status', '--json'], {config: tempDir('targon-cron-')})).data
    expect(anyone.vms.map((vm: {uid: string}) => vm.uid).sort()).toEqual([...alices, bobs].sort())
    expect(anyone.org_billing.by_owner.map((group: {owner: string | null}) => group.owner)).toEqual(['alice', 'bob', null])
  })

  it('says that an org with nothing billing bills nothing, a registered leftover aside', async () => {
    await ctx.setup()
    ctx.sim.addWorkload({name: 'tcli-default-leftover', status: 'registered'})
    const status = await targon(['status', '--fleet', 'train'])
    expect(status.code, status.stderr).toBe(0)
    expect(status.stderr).toContain('No VMs in fleet train (org acme).')
    expect(lastLine(status.stderr)).toBe('Org acme bills 0.00 USD/h: no VM bills')
    const data = parseJson(await targon(['status', '--json'])).data
    expect(data.org_billing).toEqual({billing_count: 0, by_owner: [], price_per_hour: 0, unknown_billing_count: 0, unpriced_count: 0})
    // The registered leftover is listed, and does not bill.
    expect(data.vms.map((vm: {billing: boolean}) => vm.billing)).toEqual([false])
  })
})
