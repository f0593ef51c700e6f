/** Owner scoping in a shared org: what a scope sees, what it leaves out, and when a bulk deletion is refused. */
import {describe, expect, it} from 'vitest'

import {findForOwner, outsideWarning, refuseMixedOwners, scoped} from '../../src/lib/domain/fleet/owners.js'

const vm = (uid: string, owner: string | null, name = uid) => ({name, owner, uid})
const vms = [
  vm('a1', 'alice', 'tcli-default-worker1'),
  vm('a2', 'alice'),
  vm('b1', 'bob', 'tcli-default-worker2'),
  vm('o1', null, 'tcli-default-worker2'),
]
const byName = (target: string) => (among: typeof vms) => among.filter((each) => each.name === target || each.uid === target)

describe('owner scopes', () => {
  it("sees the owner's VMs and counts the rest by owner; without an owner, or with --any-owner, everything", () => {
    const {inScope, outside} = scoped(vms, {anyOwner: false, owner: 'alice'})
    expect(inScope.map((each) => each.uid)).toEqual(['a1', 'a2'])
    expect(outside).toEqual(
      new Map([
        ['bob', 1],
        [null, 1],
      ]),
    )
    expect(outsideWarning(outside, {anyOwner: false, owner: 'alice'})).toBe(
      '2 more VM(s) of this tool bill in the org outside owner alice: 1 of bob, 1 without an owner; --any-owner shows them',
    )
    expect(scoped(vms, {anyOwner: true, owner: 'alice'}).inScope).toHaveLength(4)
    expect(scoped(vms, {anyOwner: false, owner: null}).inScope).toHaveLength(4)
    expect(outsideWarning(new Map(), {anyOwner: false, owner: 'alice'})).toBeUndefined()
  })

  it("resolves a typed name among the owner's VMs, then those without an owner; another owner's only by exact uid", () => {
    const bob = {anyOwner: false, owner: 'bob'}
    expect(findForOwner(vms, bob, 'tcli-default-worker2', byName('tcli-default-worker2')).map((each) => each.uid)).toEqual(['b1'])
    expect(
      findForOwner(vms, {anyOwner: false, owner: 'carol'}, 'tcli-default-worker2', byName('tcli-default-worker2')).map((each) => each.uid),
    ).toEqual(['o1'])
    expect(findForOwner(vms, bob, 'tcli-default-worker1', byName('tcli-default-worker1'))).toEqual([])
    expect(findForOwner(vms, bob, 'a1', () => []).map((each) => each.uid)).toEqual(['a1'])
    expect(findForOwner(vms, {anyOwner: false, owner: null}, 'tcli-default-worker2', byName('tcli-default-worker2'))).toHaveLength(2)
  })

  it('refuses a bulk deletion of several owners only when no owner is set and --any-owner is not given', () => {
    expect(() => refuseMixedOwners(vms, {anyOwner: false, owner: null})).toThrow(
      'the selection holds VMs of more than one owner: 2 of alice, 1 of bob, 1 without an owner',
    )
    expect(() => refuseMixedOwners(vms, {anyOwner: true, owner: null})).not.toThrow()
    expect(() => refuseMixedOwners(vms, {anyOwner: false, owner: 'alice'})).not.toThrow()
    expect(() => refuseMixedOwners([vm('o1', null), vm('o2', null)], {anyOwner: false, owner: null})).not.toThrow()
    expect(() => refuseMixedOwners([vm('o1', null), {...vm('a9', 'alice'), uncertain: true}], {anyOwner: false, owner: null})).toThrow(
      '1 of alice, 1 without an owner (1 of them of unknown billing: deleted elsewhere, or crashed)',
    )
  })

  it('counts records of unknown billing outside the owner apart from what bills', () => {
    const bob = {anyOwner: false, owner: 'bob'}
    expect(outsideWarning(new Map([['alice', 1]]), bob, 2)).toBe(
      '1 more VM(s) of this tool bill in the org outside owner bob: 1 of alice; 2 record(s) of this tool of unknown billing are outside owner bob; --any-owner shows them',
    )
    expect(outsideWarning(new Map(), bob, 1)).toBe(
      '1 record(s) of this tool of unknown billing are outside owner bob; --any-owner shows them',
    )
  })
})
