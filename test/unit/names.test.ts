/**
 * Workload names from the API: used as names only when they keep Targon's own rule (docs/concepts/files-and-security.md, "Names from the API"), checked where
 * answers are parsed and again by each writer (ssh_config Host lines, per-VM folders).
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {
  RawOfferSchema,
  SparseWorkloadSchema,
  WORKLOAD_NAME_PATTERN,
  WorkloadSchema,
  checkListedWorkload,
} from '../../src/lib/adapters/targon/schemas.js'
import {folderName, isOwned} from '../../src/lib/domain/fleet/naming.js'
import {hostAlias} from '../../src/lib/adapters/ssh/connect-info.js'
import {hostConfigEntry} from '../../src/lib/adapters/ssh/connect-info.js'

const HOSTILE = [
  'evil *\n  ProxyCommand touch /tmp/pwned',
  '.ssh',
  '..',
  '<!channel> <https://evil.example/login|Re-authenticate>',
  'Tcli-default-a',
  '-a',
  'a'.repeat(33),
  '',
]

describe('workload names at the API boundary', () => {
  it('a name that breaks the rule is dropped (null, name_refused), in full and sparse answers and in listings', () => {
    for (const name of HOSTILE) {
      expect(WorkloadSchema.parse({name, uid: 'wrk-1'})).toMatchObject({name: null, name_refused: true, uid: 'wrk-1'})
      expect(SparseWorkloadSchema.parse({name})).toMatchObject({name: null, name_refused: true})
      expect(checkListedWorkload({name, status: 'running', uid: 'wrk-1'})).toMatchObject({workload: {name: null, name_refused: true}})
    }
  })

  it('a name that keeps the rule passes as it is, and a server cannot set name_refused itself', () => {
    for (const name of ['tcli-default-a', 'a', 'x-1', 'a'.repeat(32)]) {
      const parsed = WorkloadSchema.parse({name, name_refused: 'yes', uid: 'wrk-1'})
      expect(parsed.name).toBe(name)
      expect(parsed.name_refused).toBeUndefined()
    }
  })

  it('whatever the server sends, a parsed name is null or keeps the rule', () => {
    fc.assert(
      fc.property(fc.string({maxLength: 40}), (name) => {
        const parsed = WorkloadSchema.parse({name, uid: 'wrk-1'})
        expect(parsed.name === null || WORKLOAD_NAME_PATTERN.test(parsed.name as string)).toBe(true)
      }),
    )
  })
})

describe('other names used as identifiers', () => {
  it('an offer is taken only with a plain resource name (it is sent back in a create); others are skipped', () => {
    for (const name of ['rtx6000b-small', 'h200_small.v2']) expect(RawOfferSchema.safeParse({cost_per_hour: 1, name}).success).toBe(true)
    for (const name of ['../x', 'a b', 'x\ny', '', 'a'.repeat(65), '<!channel>'])
      expect(RawOfferSchema.safeParse({cost_per_hour: 1, name}).success, JSON.stringify(name)).toBe(false)
  })
})

describe('what writers call a VM', () => {
  it('an ssh_config Host line takes a name that keeps the rule, else the uid', () => {
    expect(hostAlias({name: 'tcli-default-a', uid: 'wrk-1'})).toBe('tcli-default-a')
    expect(hostAlias({name: 'myvm', uid: 'wrk-1'})).toBe('myvm')
    for (const name of [...HOSTILE, null]) expect(hostAlias({name, uid: 'wrk-1'})).toBe('wrk-1')
  })

  it('a Host entry built from a name that was not checked still has one Host line, of the uid', () => {
    const entry = hostConfigEntry({
      host: '127.0.0.1',
      host_key_alias: 'targon-wrk-1',
      identity_file: '/home/u/.config/targon-fleet/keys/id_ed25519',
      known_hosts_file: '/home/u/.config/targon-fleet/known_hosts.d/wrk-1',
      name: HOSTILE[0] as string,
      port: 2222,
      uid: 'wrk-1',
    })
    expect(entry.split('\n').filter((line) => /^\S/.test(line))).toEqual(['Host wrk-1'])
    expect(entry).not.toContain('ProxyCommand')
  })

  it('a per-VM folder is only one of this tool names, else the uid', () => {
    expect(folderName({name: 'tcli-cp-a1', uid: 'wrk-1'})).toBe('tcli-cp-a1')
    for (const name of [...HOSTILE, null, 'myvm', `tcli-default-${'a'.repeat(30)}`]) expect(folderName({name, uid: 'wrk-1'})).toBe('wrk-1')
    // Over 32 characters is not Targon's name, so not this tool's either.
    expect(isOwned(`tcli-default-${'a'.repeat(30)}`)).toBe(false)
  })
})
