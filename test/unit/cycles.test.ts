/** The lint step that keeps the sources free of import cycles (scripts/cycles.mjs). */
import {describe, expect, it} from 'vitest'

import {cyclesOf} from '../../scripts/cycles.mjs'

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
})
