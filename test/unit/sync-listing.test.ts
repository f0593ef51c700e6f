/** The VM's listing from one remote command (find's records): read as untrusted input, any doubt refused as a whole. */
import {describe, expect, it} from 'vitest'

import {parseListing} from '../../src/lib/workflows/sync/listing.js'

const record = (start: string, name: string, type = 'f', mode = '644', size = '10', mtime = '1764000000.1234567890') =>
  `${[start, name, type, mode, size, mtime].join('\0')}\0`

describe("the VM's listing from find", () => {
  it('gives each directory asked for its entries, the root included, with whole-second times', () => {
    const text =
      record('.', 'a', 'd', '755', '4096') +
      record('./a', 'x.bin', 'f', '4755', '100') +
      record('./a', 'to', 'l', '777', '3') +
      record('.', 'p', 'p')
    expect(parseListing(text, ['', 'a', 'a/empty'])).toEqual(
      new Map([
        [
          '',
          [
            {kind: 'dir', mode: 0o755, mtime: 1_764_000_000, name: 'a', size: 4096},
            {kind: 'other', mode: 0o644, mtime: 1_764_000_000, name: 'p', size: 10},
          ],
        ],
        [
          'a',
          [
            {kind: 'file', mode: 0o4755, mtime: 1_764_000_000, name: 'x.bin', size: 100},
            {kind: 'link', mode: 0o777, mtime: 1_764_000_000, name: 'to', size: 3},
          ],
        ],
        ['a/empty', []],
      ]),
    )
  })

  it('keeps names with newlines and spaces, which only NUL separates', () => {
    expect(parseListing(record('.', 'two\nlines and spaces'), [''])?.get('')?.[0]?.name).toBe('two\nlines and spaces')
  })

  it.each([
    ['a directory not asked for', record('./b', 'x')],
    ['a directory outside the root', record('..', 'x')],
    ['a name with a slash', record('.', '../x')],
    ['a name of ..', record('.', '..')],
    ['an empty name', record('.', '')],
    ['a mode that is not octal', record('.', 'x', 'f', '9')],
    ['a size that is not a number', record('.', 'x', 'f', '644', '1e3')],
    ['a size past a safe integer', record('.', 'x', 'f', '644', '9999999999999999')],
    ['a time that is not a number', record('.', 'x', 'f', '644', '10', 'now')],
    ['a type that is no letter', record('.', 'x', '?')],
    ['a record cut short', record('.', 'x').slice(0, -1)],
    ['a missing field', ['.', 'x', 'f', '644', '10', ''].join('\0')],
  ])('refuses the whole answer for %s', (_why, text) => {
    expect(parseListing(record('.', 'ok') + text, ['', 'a'])).toBeNull()
  })

  it('gives empty listings for an empty answer', () => {
    expect(parseListing('', [''])).toEqual(new Map([['', []]]))
  })
})
