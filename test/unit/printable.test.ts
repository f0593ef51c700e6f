/** What a person's terminal gets of text from an API answer or a VM. */
import {describe, expect, it} from 'vitest'

import {printable, printableName} from '../../src/lib/core/output.js'

describe('printable', () => {
  it('escapes C0 (but tab and newline), DEL and C1 controls, and drops a CR before an LF', () => {
    expect(printable('a\tb\nc')).toBe('a\tb\nc')
    expect(printable('x\u001b[2Jy\u007f\u009b\u0000')).toBe('x\\x1b[2Jy\\x7f\\x9b\\x00')
    expect(printable('line\r\nnext\rover')).toBe('line\nnext\\x0dover')
    expect(printable('ünïcödé ✓')).toBe('ünïcödé ✓')
  })
})

describe('printableName', () => {
  it('escapes a line break, a carriage return and a tab in a name, so that no name forges a line of output', () => {
    expect(printableName('ok.txt\nFORGED: targon-out/j/evil')).toBe('ok.txt\\nFORGED: targon-out/j/evil')
    expect(printableName('a\r\nb\rc\td')).toBe('a\\r\\nb\\rc\\td')
    expect(printableName('x\u001b[2J ü')).toBe('x\\x1b[2J ü')
    expect(printableName('plain/name')).toBe('plain/name')
  })
})
