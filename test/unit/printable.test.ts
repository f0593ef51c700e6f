/** What a person's terminal gets of text from an API answer or a VM. */
import {describe, expect, it} from 'vitest'

import {printable} from '../../src/lib/core/output.js'

describe('printable', () => {
  it('escapes C0 (but tab and newline), DEL and C1 controls, and drops a CR before an LF', () => {
    expect(printable('a\tb\nc')).toBe('a\tb\nc')
    expect(printable('x\u001b[2Jy\u007f\u009b\u0000')).toBe('x\\x1b[2Jy\\x7f\\x9b\\x00')
    expect(printable('line\r\nnext\rover')).toBe('line\nnext\\x0dover')
    expect(printable('ünïcödé ✓')).toBe('ünïcödé ✓')
  })
})
