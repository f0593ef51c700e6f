/** The one way an identifier from an API answer becomes a local path. */
import {describe, expect, it} from 'vitest'

import {childPath, idOfChild} from '../../src/lib/adapters/state/paths.js'

describe('childPath', () => {
  it('leaves safe names as they are, so existing files keep working', () => {
    expect(childPath('/c/known_hosts.d', 'wrk-7q2m9x4k1z0a')).toBe('/c/known_hosts.d/wrk-7q2m9x4k1z0a')
    expect(childPath('/c/vms', 'acme')).toBe('/c/vms/acme')
    expect(childPath('/c/deletes/acme', 'wrk_1.x', '.json')).toBe('/c/deletes/acme/wrk_1.x.json')
  })

  it('encodes what could leave the directory, and decodes back', () => {
    for (const id of ['../../home/u/.ssh/authorized_keys', '..', '.', 'a/b', 'a\0b', 'x\nHost *']) {
      const path = childPath('/c/known_hosts.d', id, '.json')
      expect(path.startsWith('/c/known_hosts.d/'), id).toBe(true)
      expect(path.slice('/c/known_hosts.d/'.length), id).not.toContain('/')
      expect(idOfChild(path.slice('/c/known_hosts.d/'.length), '.json')).toBe(id)
    }

    expect(childPath('/c/k', '..')).toBe('/c/k/%2E%2E')
    expect(() => childPath('/c/k', '')).toThrow(/empty identifier/)
  })
})
