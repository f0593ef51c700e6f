import {describe, expect, it} from 'vitest'

import {newLines} from '../../src/lib/workflows/logs/logs.js'
import {consoleLines} from '../../src/lib/adapters/targon/client.js'

describe('consoleLines', () => {
  it('reads text/plain and the JSON shapes a console answer may take', () => {
    expect(consoleLines('a\r\nb\n\n')).toEqual(['a', 'b'])
    expect(consoleLines('')).toEqual([])
    expect(consoleLines('"a\\nb\\n"')).toEqual(['a', 'b'])
    expect(consoleLines('{"logs": "a\\nb\\n"}')).toEqual(['a', 'b'])
    expect(consoleLines('["a", "b"]')).toEqual(['a', 'b'])
    expect(consoleLines('{"items": [{"message": "a"}, {"line": "b"}]}')).toEqual(['a', 'b'])
    expect(consoleLines('[    0.000000] Linux {not json')).toEqual(['[    0.000000] Linux {not json'])
    expect(consoleLines('{"unknown": 1}')).toEqual([])
  })
})

describe('newLines', () => {
  it('returns what follows the lines already shown, also from a moving window', () => {
    expect(newLines([], ['a'])).toEqual(['a'])
    expect(newLines(['a', 'b'], ['a', 'b', 'c'])).toEqual(['c'])
    expect(newLines(['a', 'b'], ['a', 'b'])).toEqual([])
    expect(newLines(['a', 'b', 'c'], ['b', 'c', 'd', 'e'])).toEqual(['d', 'e'])
    expect(newLines(['a', 'b'], ['x', 'y'])).toEqual(['x', 'y'])
  })
})
