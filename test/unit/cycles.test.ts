/** The lint step that keeps the sources free of import cycles (scripts/cycles.mjs). */
import {describe, expect, it} from 'vitest'

import {cyclesOf, folderCyclesOf} from '../../scripts/cycles.mjs'

describe('import cycles', () => {
  it('finds a cycle through any number of files, and none in a graph that points one way', () => {
    const cyclic = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ])
    expect(cyclesOf(cyclic)).toEqual([['a', 'b', 'c', 'a']])
    const layered = new Map([
      ['commands', ['lib', 'shell']],
      ['lib', ['shell']],
      ['shell', []],
    ])
    expect(cyclesOf(layered)).toEqual([])
  })

  it('finds a cycle between folders that no file cycle shows, naming one import for each step', () => {
    // domain/fleet.ts -> adapters/ssh.ts -> domain/naming.ts: no file is on a cycle, yet the two folders need each other.
    const files = new Map([
      ['lib/domain/fleet.ts', ['lib/adapters/ssh.ts', 'lib/domain/naming.ts']],
      ['lib/domain/naming.ts', []],
      ['lib/adapters/ssh.ts', ['lib/domain/naming.ts', 'lib/core/errors.ts']],
      ['lib/core/errors.ts', []],
    ])
    expect(cyclesOf(files)).toEqual([])
    expect(folderCyclesOf(files)).toEqual([
      {
        edges: [
          ['lib/domain/fleet.ts', 'lib/adapters/ssh.ts'],
          ['lib/adapters/ssh.ts', 'lib/domain/naming.ts'],
        ],
        folders: ['lib/domain', 'lib/adapters', 'lib/domain'],
      },
    ])
    const layered = new Map([
      ['lib/domain/fleet.ts', ['lib/adapters/ssh.ts', 'lib/domain/naming.ts']],
      ['lib/domain/naming.ts', ['lib/core/errors.ts']],
      ['lib/adapters/ssh.ts', ['lib/core/errors.ts']],
      ['lib/core/errors.ts', []],
    ])
    expect(folderCyclesOf(layered)).toEqual([])
  })
})
