/**
 * One truth wherever targon runs: a VM deleted from one config directory is known as deleted from every other, through
 * the server's history of it, and what bills is told from what may.
 */
import {appendFileSync, readdirSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import type {TargonSimulator} from '../simulator/simulator.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx
const HOUR = 3_600_000
const PRICE = 1.69

/** A VM that ran for an hour, listed as `status` (running by default). */
function vm(sim: TargonSimulator, name: string, fields: {project_id?: string | null} = {}) {
  const deployedAt = Date.now() - HOUR
  return sim.addWorkload({created_at: new Date(deployedAt).toISOString(), deployedAt, name, status: 'running', ...fields})
}

/** A VM deleted by another directory: its `error` tombstone is listed. */
function tombstone(sim: TargonSimulator, name: string, fields: {project_id?: string | null} = {}): string {
  const workload = vm(sim, name, fields)
  sim.deleteExternally(workload.uid)
  expect(sim.current(workload.uid)?.status).toBe('error')
  return workload.uid
}

function ownerProject(sim: TargonSimulator, owner: string): string {
  const uid = `prj-${owner}`
  sim.projects.set(uid, {name: `tcli-owner-${owner}`, org: 'acme', uid})
  return uid
}

const eventReads = (sim: TargonSimulator) => sim.requests('GET', '/events')

describe('tombstones seen from a directory that did not delete them', () => {
  it('credits burn only what bills, and --min-runway does not ring for tombstones', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const live = vm(ctx.sim, 'tcli-default-live')
    for (let index = 0; index < 5; index++) tombstone(ctx.sim, `tcli-default-gone${index}`)
    const credits = await targon(['credits', '--min-runway', '6h', '--json'], {config: tempDir('targon-fresh-')})
    expect(credits.code, credits.stderr).toBe(0)
    expect(parseJson(credits).data).toMatchObject({
      billing_vms: 1,
      burn_usd_per_hour: PRICE,
      possible_burn_usd_per_hour: 0,
      possible_vms: [],
      short: false,
      uncertain_vms: [],
      vms: [{uid: live.uid}],
    })
  })

  it('without the history, tombstones are possible burn: the alarm rings until a measured burn clears them', async () => {
    await ctx.setup({history: 'missing', tombstoneBounceMs: 0})
    vm(ctx.sim, 'tcli-default-live')
    const gone = Array.from({length: 5}, (_, index) => tombstone(ctx.sim, `tcli-default-gone${index}`))
    const config = tempDir('targon-fresh-')
    // 40 USD less 6 VM-hours billed: about 29.9 USD, 17.7 h at 1.69 USD/h, but 2.9 h if the five tombstones billed.
    const first = await targon(['credits', '--min-runway', '6h', '--json'], {config})
    expect(first.code, first.stdout).toBe(14)
    const data = parseJson(first).data
    expect(data).toMatchObject({burn_usd_per_hour: PRICE, measured_burn_usd_per_hour: null, short: true})
    expect(data.possible_burn_usd_per_hour).toBeCloseTo(5 * PRICE, 6)
    expect([...data.uncertain_vms].sort()).toEqual([...gone].sort())
    expect(parseJson(first).error.message).toMatch(/if the 5 record\(s\) of unknown billing bill/)

    // A reading of this directory an hour ago, 1.69 USD higher: the credits fell by what is known to bill alone.
    const [month] = readdirSync(join(config, 'ledger', 'acme'))
    const credits = data.credits as number
    const before = {at: new Date(Date.now() - HOUR).toISOString(), credits: credits + PRICE, currency: 'USD', kind: 'credits'}
    appendFileSync(join(config, 'ledger', 'acme', month as string), `${JSON.stringify(before)}\n`)
    const second = await targon(['credits', '--min-runway', '6h', '--json'], {config})
    expect(second.code, second.stdout).toBe(0)
    expect(parseJson(second).data).toMatchObject({
      measured_burn_conclusive: true,
      measured_burn_usd_per_hour: expect.closeTo(PRICE, 1),
      possible_runway_hours: null,
      short: false,
    })
    const text = await targon(['credits'], {config})
    expect(text.stdout).toMatch(/Measured burn: 1\.\d+ USD\/h/)
    expect(text.stdout).toMatch(/Possible burn: 8\.45 USD\/h more over 5 record\(s\) of unknown billing/)
  })

  it('a measured burn below what is known to bill proves nothing: the alarm on the possible burn still rings', async () => {
    // Credits debited in batches (or never): two readings an hour apart are equal, measured 0 USD/h.
    await ctx.setup({credits: 'unchanged', history: 'missing', tombstoneBounceMs: 0})
    vm(ctx.sim, 'tcli-default-live')
    for (let index = 0; index < 5; index++) tombstone(ctx.sim, `tcli-default-gone${index}`)
    const config = tempDir('targon-fresh-')
    const first = await targon(['credits', '--min-runway', '6h', '--json'], {config})
    expect(first.code, first.stdout).toBe(14)
    const [month] = readdirSync(join(config, 'ledger', 'acme'))
    const before = {at: new Date(Date.now() - HOUR).toISOString(), credits: parseJson(first).data.credits, currency: 'USD', kind: 'credits'}
    appendFileSync(join(config, 'ledger', 'acme', month as string), `${JSON.stringify(before)}\n`)
    const second = await targon(['credits', '--min-runway', '6h', '--json'], {config})
    expect(second.code, second.stdout).toBe(14)
    expect(parseJson(second).data).toMatchObject({
      measured_burn_conclusive: false,
      measured_burn_usd_per_hour: 0,
      possible_runway_hours: expect.any(Number),
      short: true,
    })
    expect(parseJson(second).warnings.join('\n')).toMatch(/proves nothing/)
    const text = await targon(['credits'], {config})
    expect(text.stdout).toMatch(/Measured burn: 0(\.0+)? USD\/h .*inconclusive/)
  })

  it('warns when the credits fall faster than what is known to bill', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    vm(ctx.sim, 'tcli-default-live')
    const config = tempDir('targon-fresh-')
    expect((await targon(['credits', '--json'], {config})).code).toBe(0)
    const [month] = readdirSync(join(config, 'ledger', 'acme'))
    const before = {at: new Date(Date.now() - HOUR).toISOString(), credits: 100, currency: 'USD', kind: 'credits'}
    appendFileSync(join(config, 'ledger', 'acme', month as string), `${JSON.stringify(before)}\n`)
    const credits = await targon(['credits', '--json'], {config})
    expect(credits.code).toBe(0)
    expect(parseJson(credits).warnings.join('\n')).toMatch(/faster than the 1\.69 USD\/h known to bill/)
  })

  it('status of 20 VMs and 50 tombstones counts only what bills, reads each history once, and none on the next run', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    for (let index = 0; index < 20; index++) vm(ctx.sim, `tcli-default-vm${index}`)
    const gone = Array.from({length: 50}, (_, index) => tombstone(ctx.sim, `tcli-default-old${index}`))
    const config = tempDir('targon-fresh-')
    const first = await targon(['status', '--json'], {config})
    expect(first.code, first.stderr).toBe(0)
    expect(parseJson(first).data.totals).toMatchObject({billing_count: 20, count: 20, unknown_billing_count: 0})
    const reads = eventReads(ctx.sim)
    expect(new Set(reads.map((request) => request.path.split('/')[6])).size).toBe(50)
    for (const uid of gone) expect(reads.filter((request) => request.path.includes(`/${uid}/`)).length).toBeLessThanOrEqual(5)
    expect(reads).toHaveLength(50)

    const second = await targon(['status', '--json', '--show-deleted'], {config})
    expect(parseJson(second).data.totals).toMatchObject({billing_count: 20, count: 70, unknown_billing_count: 0})
    expect(eventReads(ctx.sim)).toHaveLength(50)
  })

  it('reads a paged history in either order, and a delete undone by a later running is no tombstone', async () => {
    for (const historyOrder of ['oldest-first', 'newest-first'] as const) {
      await ctx.setup({historyOrder, historyPageSize: 1, tombstoneBounceMs: 0})
      const gone = tombstone(ctx.sim, 'tcli-default-gone')
      const revived = tombstone(ctx.sim, 'tcli-default-revived')
      ctx.sim.addHistory(revived, {created_at: new Date(Date.now() + 1000).toISOString(), new_status: 'running'})
      const status = parseJson(await targon(['status', '--json', '--show-deleted'], {config: tempDir('targon-fresh-')}))
      const byUid = new Map(status.data.vms.map((each: {uid: string}) => [each.uid, each]))
      expect(byUid.get(gone), historyOrder).toMatchObject({billing: false, deleted: true, history: 'deleted'})
      expect(byUid.get(revived), historyOrder).toMatchObject({billing: true, deleted: false, history: 'crashed'})
      await ctx.sim.stop()
    }
  })

  it('a crashed VM seen from elsewhere still bills, and down --all deletes it', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const crashed = vm(ctx.sim, 'tcli-default-crashed')
    ctx.sim.crash(crashed.uid)
    const config = tempDir('targon-fresh-')
    const status = await targon(['status', '--json'], {config})
    expect(parseJson(status).data.vms).toMatchObject([{billing: true, billing_assumed: false, uid: crashed.uid}])
    expect(parseJson(await targon(['credits', '--json'], {config})).data).toMatchObject({burn_usd_per_hour: PRICE, billing_vms: 1})
    const down = await targon(['down', '--all', '--json'], {config})
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'woken-and-deleted', billing: false, uid: crashed.uid}])
    expect(ctx.sim.billing()).toEqual([])
  })

  it('a name shared by a tombstone and a live VM means the live one', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    tombstone(ctx.sim, 'tcli-default-w1')
    const live = vm(ctx.sim, 'tcli-default-w1')
    const down = await targon(['down', 'tcli-default-w1', '--dry-run', '--json'], {config: tempDir('targon-fresh-')})
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'would-delete', uid: live.uid}])
  })

  it('up --name takes a name whose only workload is another directory tombstone: it rents anew', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const gone = tombstone(ctx.sim, 'tcli-default-w1')
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--name', 'w1', '--json'], {
      config: tempDir('targon-fresh-'),
    })
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const made = parseJson(up).data.vms[0].uid
    expect(made).not.toBe(gone)
    expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([made])
  })

  it('down still sends its one DELETE to a tombstone named by uid: Targon answer outranks the history', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const uid = tombstone(ctx.sim, 'tcli-default-gone')
    const down = await targon(['down', uid, '--json'], {config: tempDir('targon-fresh-')})
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{billing: false, uid}])
    expect(ctx.sim.requests('DELETE', `/workloads/${uid}`)).toHaveLength(1)
  })
})

describe('two owners and a cron directory', () => {
  it('counts only live VMs for owners: no warning about a colleague deleted VM, no refusal of a bulk down', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const alice = ownerProject(ctx.sim, 'alice')
    const bob = ownerProject(ctx.sim, 'bob')
    const alices = [tombstone(ctx.sim, 'tcli-default-a1', {project_id: alice}), tombstone(ctx.sim, 'tcli-default-a2', {project_id: alice})]
    tombstone(ctx.sim, 'tcli-default-b1', {project_id: bob})
    const bobs = vm(ctx.sim, 'tcli-default-b2', {project_id: bob})
    for (let index = 0; index < 3; index++) tombstone(ctx.sim, `tcli-default-n${index}`)

    const status = await targon(['status', '--json'], {config: tempDir('targon-bob-'), env: {TARGON_OWNER: 'bob'}})
    expect(status.code, status.stderr).toBe(0)
    const doc = parseJson(status)
    expect(doc.data.outside_owner).toEqual([])
    expect(doc.data.vms.map((each: {uid: string}) => each.uid)).toEqual([bobs.uid])
    for (const uid of alices) expect(JSON.stringify(doc.warnings)).not.toContain(uid)

    const cron = tempDir('targon-cron-')
    for (const args of [
      ['down', '--all', '--dry-run', '--json'],
      ['down', '--idle', '--dry-run', '--json'],
    ]) {
      const down = await targon(args, {config: cron})
      // Not refused for the deleted records (exit 2): a dry run that only plans exits 0.
      expect(down.code, `${args.join(' ')}: ${down.stdout}`).toBe(0)
    }
    const plan = parseJson(await targon(['down', '--all', '--dry-run', '--json'], {config: cron}))
    expect(plan.data.results).toMatchObject([{action: 'would-delete', uid: bobs.uid}])
  })
})

describe('cost in the directory that rented, when another directory deleted', () => {
  it('matches the billed time within 15 %', async () => {
    await ctx.setup()
    const renter = tempDir('targon-renter-')
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--count', '2', '--json'], {config: renter})
    expect(up.code, up.stderr).toBe(0)
    const uids: string[] = parseJson(up).data.vms.map((each: {uid: string}) => each.uid)
    await sleep(4000)
    const down = await targon(['down', '--all', '--json'], {config: tempDir('targon-cron-')})
    expect(down.code, down.stdout).toBe(0)
    // The records have turned into `error` tombstones when the renter next looks.
    await sleep(500)
    for (const uid of uids) expect(ctx.sim.current(uid)?.status).toBe('error')

    const cost = await targon(['cost', '--since', '1d', '--json'], {config: renter})
    expect(cost.code, cost.stderr).toBe(0)
    const report = parseJson(cost).data
    expect(report.excluded).toEqual([])
    const billed = uids.reduce((sum, uid) => sum + ctx.sim.billableSeconds(uid), 0)
    expect(Math.abs(report.total_seconds - billed) / billed).toBeLessThan(0.15)
  })
})

describe('the directory that rented, when another deleted and the history is missing', () => {
  it('shows billing unknown (null), made here, never billing; credits counts it possible and down --all deletes it', async () => {
    await ctx.setup({history: 'missing', tombstoneBounceMs: 0})
    const renter = tempDir('targon-renter-')
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {config: renter})
    expect(up.code, up.stderr).toBe(0)
    const uid: string = parseJson(up).data.vms[0].uid
    expect((await targon(['down', '--all', '--json'], {config: tempDir('targon-cron-')})).code).toBe(0)
    await sleep(500)
    expect(ctx.sim.current(uid)?.status).toBe('error')

    const status = parseJson(await targon(['status', '--json', '--show-deleted'], {config: renter}))
    expect(status.data.vms).toMatchObject([{billing: null, billing_assumed: true, history: 'unknown', uid}])
    expect(status.data.totals).toMatchObject({billing_count: 0, price_per_hour: 0, unknown_billing_count: 1})
    const credits = parseJson(await targon(['credits', '--json'], {config: renter}))
    expect(credits.data).toMatchObject({billing_vms: 0, burn_usd_per_hour: 0, uncertain_vms: [uid]})
    const down = await targon(['down', '--all', '--json'], {config: renter})
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{billing: false, uid}])
    expect(ctx.sim.requests('DELETE', `/workloads/${uid}`)).toHaveLength(2)
  })
})

describe('summaries, not walls', () => {
  const lines = (text: string, pattern: RegExp) => text.split('\n').filter((line) => pattern.test(line))

  it('status and down say one line per kind, and --show-deleted lists them', async () => {
    await ctx.setup({tombstoneBounceMs: 0})
    const live = vm(ctx.sim, 'tcli-default-live')
    for (let index = 0; index < 12; index++) tombstone(ctx.sim, `tcli-default-gone${index}`)
    const config = tempDir('targon-fresh-')
    const status = await targon(['status'], {config})
    expect(status.code, status.stderr).toBe(0)
    expect(lines(status.stderr, /deleted VM/)).toEqual(['12 deleted VMs still listed by Targon, not billing: --show-deleted lists them'])
    expect(lines(status.stdout, /tcli-default-/)).toHaveLength(1)
    expect(lines((await targon(['status', '--show-deleted'], {config})).stdout, /tcli-default-/)).toHaveLength(13)
    expect(parseJson(await targon(['status', '--json'], {config})).data.totals.deleted_hidden_count).toBe(12)

    const down = await targon(['down', '--all', '--dry-run'], {config})
    expect(down.code, down.stderr).toBe(0)
    expect(lines(down.stderr, /deleted VM/)).toEqual([
      '12 deleted VMs still listed by Targon, not billing, left alone: --show-deleted lists them',
    ])
    expect(lines(down.stdout, /tcli-default-/)).toEqual([expect.stringContaining(live.uid)])
    expect(lines((await targon(['down', '--all', '--dry-run', '--show-deleted'], {config})).stdout, /deleted, still listed/)).toHaveLength(
      12,
    )
  })

  it('without the history: one warning for the records of unknown billing on status, cost and down --idle', async () => {
    await ctx.setup({history: 'missing', tombstoneBounceMs: 0})
    vm(ctx.sim, 'tcli-default-live')
    for (let index = 0; index < 12; index++) tombstone(ctx.sim, `tcli-default-gone${index}`)
    const config = tempDir('targon-fresh-')
    const status = await targon(['status'], {config})
    expect(lines(status.stderr, /^Warning: .*unknown billing/)).toHaveLength(1)
    expect(lines(status.stderr, /unknown billing/)[0]).toMatch(/^Warning: 12 records of unknown billing .*--show-deleted lists them/)
    // The org's line counts them too, in a few words.
    expect(status.stderr.trimEnd().split('\n').at(-1)).toBe('Org acme bills 1.69 USD/h: no owner 1.69 (12 records of unknown billing)')
    expect(status.stderr).toMatch(/12 probably deleted, by Targon's teardown message/)
    expect(parseJson(await targon(['status', '--json'], {config})).data.totals).toMatchObject({billing_count: 1, unknown_billing_count: 12})
    expect(status.stderr).not.toMatch(/settles it/)
    expect(lines(status.stdout, /tcli-default-/)).toHaveLength(1)
    expect(lines((await targon(['status', '--show-deleted'], {config})).stdout, /tcli-default-/)).toHaveLength(13)

    const cost = await targon(['cost'], {config})
    expect(cost.code, cost.stderr).toBe(0)
    expect(lines(cost.stdout, /Excluded from the total/)).toEqual([
      'Excluded from the total: 12 of unknown billing (an error record: a crash, or deleted elsewhere): --show-deleted lists them (--json: excluded).',
    ])
    expect(lines((await targon(['cost', '--show-deleted'], {config})).stdout, /Excluded from the total/)).toHaveLength(12)

    ctx.sim.deleteExternally(ctx.sim.billing()[0]!.uid)
    const idle = await targon(['down', '--idle', '--dry-run'], {config})
    expect(idle.code, idle.stderr).toBe(0)
    expect(lines(idle.stdout, /^kept /)).toEqual([])
    const warning = lines(idle.stderr, /not running/)
    expect(warning).toHaveLength(1)
    expect(warning[0]).toMatch(/kept 13 VMs not running \(13 error\), which have no idle clock, 13 of unknown billing/)
    expect(warning[0]!.length).toBeLessThan(300)
  })
})
