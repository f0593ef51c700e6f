/**
 * A shared org: alice and bob rent in one org from their own config directories, each with an owner set, next to
 * a VM from before owners. Each sees and deletes only their own; without an owner a bulk deletion of a mix is
 * refused; --any-owner sees and deletes them all. Played both with listing items that carry project_id and with
 * the SDK's summary shape, which leaves it out.
 */
import {describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {runInProcess} from '../helpers/in-process.js'
import {simulatorEnv, startSimulator} from '../helpers/simulator.js'

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json']

for (const summaryProjectId of [true, false]) {
  describe(`two owners in one org (listing items ${summaryProjectId ? 'with' : 'without'} project_id)`, () => {
    it('keeps each owner to their own VMs, refuses a mixed bulk deletion without an owner, and --any-owner takes all', async () => {
      const sim = await startSimulator({summaryProjectId})
      try {
        const dirs = {alice: tempDir('targon-alice-'), bob: tempDir('targon-bob-'), nobody: tempDir('targon-nobody-')}
        const as = (who: keyof typeof dirs, args: string[]) =>
          runInProcess(args, {env: simulatorEnv(sim, {TARGON_CONFIG_DIR: dirs[who], TARGON_OWNER: who === 'nobody' ? undefined : who})})
        const upAs = async (who: keyof typeof dirs, ...extra: string[]) => {
          const up = await as(who, [...UP, ...extra])
          expect(up.code, up.stdout + up.stderr).toBe(0)
          return parseJson(up).data.vms[0] as {name: string; uid: string}
        }

        const old = await upAs('nobody')
        const alice = await upAs('alice', '--name', 'worker1')
        const bob = await upAs('bob')
        // One project per owner, and the VMs are in them.
        expect([...sim.projects.values()].map((project) => project.name).sort()).toEqual(['tcli-owner-alice', 'tcli-owner-bob'])
        expect(sim.current(old.uid)?.project_id).toBeNull()
        expect(sim.current(alice.uid)?.project_id).not.toBe(sim.current(bob.uid)?.project_id)

        // alice sees hers; the others bill outside her owner, and she is told so.
        const status = parseJson(await as('alice', ['status', '--json']))
        expect(status.data.vms.map((vm: {uid: string}) => vm.uid)).toEqual([alice.uid])
        expect(status.data.owner).toBe('alice')
        expect(status.data.outside_owner).toEqual(
          expect.arrayContaining([
            {billing_count: 1, owner: 'bob', owner_known: true},
            {billing_count: 1, owner: null, owner_known: true},
          ]),
        )
        expect(status.warnings.join('\n')).toContain(
          '2 more VM(s) of this tool bill in the org outside owner alice: 1 of bob, 1 without an owner',
        )
        // Every directory ends status with the org's billing by owner, a directory without an owner too.
        const orgLine = 'Org acme bills 5.07 USD/h: alice 1.69, bob 1.69, no owner 1.69'
        expect((await as('alice', ['status'])).stderr.trimEnd().split('\n').at(-1)).toBe(orgLine)
        const fromNobody = await as('nobody', ['status'])
        expect(fromNobody.stderr.trimEnd().split('\n').at(-1)).toBe(orgLine)
        for (const vm of [old, alice, bob]) expect(fromNobody.stdout).toContain(vm.uid)
        expect(parseJson(await as('nobody', ['status', '--json'])).data.org_billing.by_owner).toMatchObject([
          {group: 'owner', owner: 'alice'},
          {group: 'owner', owner: 'bob'},
          {group: 'no-owner', owner: null},
        ])
        const all = parseJson(await as('alice', ['status', '--any-owner', '--json'])).data.vms
        expect(Object.fromEntries(all.map((vm: {uid: string; owner: string | null}) => [vm.uid, vm.owner]))).toEqual({
          [alice.uid]: 'alice',
          [bob.uid]: 'bob',
          [old.uid]: null,
        })

        // bob cannot take over alice's worker1, nor reach it by its label; he can name an old VM.
        const takeOver = await as('bob', [...UP, '--name', 'worker1'])
        expect(parseJson(takeOver).error.code).toBe('NAME_CONFLICT')
        expect(sim.workloads.size).toBe(3)
        const notFound = await as('bob', ['down', 'worker1', '--json'])
        expect(notFound.code).toBe(4)
        // Where to look is where a colleague's VM shows: every owner too.
        expect(parseJson(notFound).error.hint).toContain('targon status --all-fleets --any-owner')
        // By its exact uid, a colleague's VM never goes without a word: refused off a terminal, naming its owner.
        const byUid = await as('bob', ['down', alice.uid, '--json'])
        expect(byUid.code, byUid.stdout).toBe(2)
        expect(parseJson(byUid).error).toMatchObject({
          hint: 'ask its owner, or pass --any-owner (or --yes) to delete it all the same',
          message: `${alice.name} belongs to owner alice, not to owner bob`,
        })
        expect(sim.current(alice.uid)?.status).toBe('running')
        expect(parseJson(await as('bob', ['status', old.name, '--json'])).data.vms[0].owner).toBeNull()

        // No owner set: a bulk deletion that would reach several owners is refused, naming them; nothing is deleted.
        const mixed = await as('nobody', ['down', '--all', '--json'])
        expect(mixed.code).toBe(2)
        expect(parseJson(mixed).error.message).toBe(
          'the selection holds VMs of more than one owner: 1 of alice, 1 of bob, 1 without an owner',
        )
        expect(sim.billing()).toHaveLength(3)

        // alice's fleet selector, and her cron, delete hers alone, and say what else bills.
        const fleet = await as('alice', ['down', '--fleet', 'default', '--dry-run', '--json'])
        expect(parseJson(fleet).data.results.map((result: {uid: string}) => result.uid)).toEqual([alice.uid])
        const down = await as('alice', ['down', '--all', '--json'])
        expect(down.code, down.stdout).toBe(0)
        expect(parseJson(down).data.results.map((result: {uid: string}) => result.uid)).toEqual([alice.uid])
        expect(parseJson(down).warnings.join('\n')).toContain('outside owner alice: 1 of bob, 1 without an owner')
        expect(
          sim
            .billing()
            .map((workload) => workload.uid)
            .sort(),
        ).toEqual([bob.uid, old.uid].sort())

        // alice deletes bob's by uid only with --yes, and is told whose it was.
        expect((await as('alice', ['down', bob.uid, '--json'])).code).toBe(2)
        const withYes = await as('alice', ['down', bob.uid, '--yes', '--json'])
        expect(withYes.code, withYes.stdout).toBe(0)
        expect(parseJson(withYes).warnings).toContain(`deleting with --yes: ${bob.name} belongs to owner bob`)
        expect(sim.billing().map((workload) => workload.uid)).toEqual([old.uid])

        // --any-owner, from a fresh directory without an owner: everything, as asked.
        const everything = await runInProcess(['down', '--all', '--any-owner', '--json'], {
          env: simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir('targon-cron-')}),
        })
        expect(everything.code, everything.stdout).toBe(0)
        expect(sim.billing()).toEqual([])
      } finally {
        await sim.stop()
      }
    }, 90_000)
  })
}

describe('an owner that cannot be read', () => {
  it("is nobody's to delete: neither by a name under an owner, nor in bulk without one", async () => {
    const sim = await startSimulator({summaryProjectId: false})
    try {
      const dirs = {alice: tempDir('targon-alice-'), bob: tempDir('targon-bob-')}
      const as = (who: 'alice' | 'bob' | 'nobody', args: string[]) =>
        runInProcess(args, {
          env: simulatorEnv(sim, {
            TARGON_CONFIG_DIR: who === 'nobody' ? tempDir('targon-nobody-') : dirs[who],
            TARGON_OWNER: who === 'nobody' ? undefined : who,
          }),
        })
      const up = await as('bob', [...UP, '--name', 'train'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const bobs = parseJson(up).data.vms[0] as {name: string; uid: string}
      // The listing leaves project_id out, and the full read of bob's VM fails.
      sim.inject({method: 'GET', path: new RegExp(`/workloads/${bobs.uid}$`), status: 500})
      const named = await as('alice', ['down', bobs.name, '--dry-run', '--json'])
      expect(named.code).toBe(4)
      const bulk = await as('nobody', ['down', '--all', '--json'])
      expect(bulk.code).toBe(2)
      expect(parseJson(bulk).error.message).toBe('the selection holds VMs of more than one owner: 1 whose owner could not be read')
      expect(sim.billing().map((workload) => workload.uid)).toEqual([bobs.uid])
      sim.clearFaults()
      expect((await as('bob', ['down', '--all', '--json'])).code).toBe(0)
      expect(sim.billing()).toEqual([])
    } finally {
      await sim.stop()
    }
  })
})

describe('the owner project', () => {
  it('is created once though the answer to its create was lost: the projects are listed before it is sent again', async () => {
    const sim = await startSimulator()
    try {
      sim.inject({dropAfterCommit: true, method: 'POST', path: /\/projects$/, times: 1})
      const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: tempDir('targon-alice-'), TARGON_OWNER: 'alice', TARGON_RECONCILE_WINDOW: '2'})
      const up = await runInProcess(UP, {env})
      expect(up.code, up.stdout + up.stderr).toBe(0)
      expect([...sim.projects.values()].map((project) => project.name)).toEqual(['tcli-owner-alice'])
      expect(sim.requests('POST', /\/projects$/)).toHaveLength(1)
      expect((await runInProcess(['down', '--all', '--json'], {env})).code).toBe(0)
      expect(sim.billing()).toEqual([])
    } finally {
      await sim.stop()
    }
  })

  it('refuses an owner name that is not one', async () => {
    const run = await runInProcess(['status', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_test_key', TARGON_OWNER: 'Alice Smith'}})
    expect(run.code).toBe(3)
    expect(parseJson(run).error.message).toBe('TARGON_OWNER "Alice Smith" is not an owner name')
  })
})
