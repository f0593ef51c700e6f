/** Streamed output cut into lines: UTF-8 characters and CRLF split across chunks come out whole. */
import {describe, expect, it} from 'vitest'

import {LineSplitter, MAX_LINE_CHARS, textDecoder} from '../../src/lib/core/lines.js'

function linesOf(chunks: (Buffer | string)[]): string[] {
  const lines: string[] = []
  const splitter = new LineSplitter((line) => lines.push(line))
  for (const chunk of chunks) splitter.push(chunk)
  splitter.flush()
  return lines
}

describe('the line splitter', () => {
  it('decodes a character split between two byte chunks, at every split point', () => {
    const bytes = Buffer.from('naïve 日本 🎬\r\nnext\nlast', 'utf8')
    for (let at = 0; at <= bytes.length; at++)
      expect(linesOf([bytes.subarray(0, at), bytes.subarray(at)]), `split at byte ${at}`).toEqual(['naïve 日本 🎬', 'next', 'last'])
    // Byte by byte, too.
    expect(linesOf([...bytes].map((byte) => Buffer.from([byte])))).toEqual(['naïve 日本 🎬', 'next', 'last'])
  })

  it('takes text chunks, keeps empty lines, and emits nothing more for a final newline', () => {
    expect(linesOf(['a\n\nb', '\r', '\n'])).toEqual(['a', '', 'b'])
    expect(linesOf([])).toEqual([])
  })

  it("decodes a stream's chunks as text across boundaries", () => {
    const decode = textDecoder()
    const bytes = Buffer.from('é', 'utf8')
    expect(decode(bytes.subarray(0, 1)) + decode(bytes.subarray(1))).toBe('é')
  })

  it('holds no line past MAX_LINE_CHARS: output without newlines is passed on in pieces, nothing lost', () => {
    const chunk = 'x'.repeat(64 * 1024)
    const lines = linesOf([...Array.from({length: 40}, () => chunk), 'end\n'])
    expect(lines.every((line) => line.length <= MAX_LINE_CHARS)).toBe(true)
    expect(lines.join('')).toBe(`${chunk.repeat(40)}end`)
  })
})
