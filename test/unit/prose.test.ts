import {describe, expect, it} from 'vitest'

import {prose} from '../../src/lib/core/output.js'
import Up from '../../src/commands/up.js'

describe('prose', () => {
  it('joins the lines of each paragraph and keeps the blank line between paragraphs', () => {
    expect(prose('one\ntwo  \n  three\n\nfour\nfive\n')).toBe('one two three\n\nfour five')
  })

  it('leaves no source line break inside a paragraph of a command description', () => {
    for (const paragraph of (Up.description ?? '').split('\n\n')) expect(paragraph).not.toContain('\n')
  })
})
