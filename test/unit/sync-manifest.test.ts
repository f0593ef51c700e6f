/** The sync's manifest: read back as untrusted input, and what it decides about each file (send, compare, keep, remove). */
import {describe, expect, it} from 'vitest'

import {
  MAX_MANIFEST_BYTES,
  type ManifestEntry,
  type RemoteState,
  parseManifest,
  planSync,
  refusedPath,
  removal,
  serializeManifest,
} from '../../src/lib/workflows/sync/manifest.js'
import type {LocalFile} from '../../src/lib/workflows/sync/walk.js'

const MTIME = 1_764_000_000_123.456
const file = (rel: string, size = 10, mtimeMs = MTIME, mode = 0o644): LocalFile => ({mode, mtimeMs, rel, size})
const onVm = (size = 10, mtime = Math.floor(MTIME / 1000), mode = 0o644): RemoteState => ({kind: 'file', mode, mtime, size})
const entry = (size = 10, mtime_ms = MTIME): ManifestEntry => ({mtime_ms, size})
const text = (files: Record<string, unknown>) => JSON.stringify({files, format: 'targon-sync-manifest', version: 1})

describe('reading a manifest back', () => {
  it('round-trips what the sync writes, sub-millisecond times included', () => {
    const files = new Map([
      ['b/c.txt', entry(3, 1.5)],
      ['a.txt', entry(0, MTIME)],
    ])
    expect(parseManifest(serializeManifest(files))).toEqual({files: new Map([...files].sort())})
  })

  it("round-trips a placed file's hash, and reads entries of earlier versions without one", () => {
    const files = new Map([
      ['a.txt', {...entry(), sha256: 'ab'.repeat(32)}],
      ['b.txt', entry()],
    ])
    expect(parseManifest(serializeManifest(files))).toEqual({files})
  })

  it.each([
    ['not JSON', '{"files":', /not JSON/],
    ['another format', JSON.stringify({files: {}, format: 'other', version: 1}), /not a sync manifest/],
    ['a later version', JSON.stringify({files: {}, format: 'targon-sync-manifest', version: 2}), /not a sync manifest/],
    ['an unknown field', text({'a.txt': {...entry(), mode: 511}}), /not a sync manifest/],
    ['a negative size', text({'a.txt': entry(-1)}), /not a sync manifest/],
    ['a fractional size', text({'a.txt': entry(1.5)}), /not a sync manifest/],
    ['a climbing path', text({'../x': entry()}), /"\.\.\/x": an empty, "\." or "\.\." component/],
    ['a climbing path inside', text({'a/../../x': entry()}), /component/],
    ['an absolute path', text({'/etc/passwd': entry()}), /an absolute path/],
    ['a newline in a name', text({'a\nb': entry()}), /a control character/],
    ['an empty component', text({'a//b': entry()}), /component/],
    ['a path under .git', text({'sub/.git/config': entry()}), /never sends/],
    ['a path under targon-out', text({'targon-out/job/x': entry()}), /never sends/],
    ['an overlong name', text({['x'.repeat(256)]: entry()}), /overlong/],
    ['an array', '[]', /not a sync manifest/],
    ['a hash in capitals', text({'a.txt': {...entry(), sha256: 'AB'.repeat(32)}}), /a size and a time, perhaps with a hash, expected/],
    ['a short hash', text({'a.txt': {...entry(), sha256: 'ab'}}), /a size and a time, perhaps with a hash, expected/],
    ['a size as text', text({'a.txt': {mtime_ms: MTIME, size: '10'}}), /a size and a time, perhaps with a hash, expected/],
    ['an entry that is an array', text({'a.txt': [10, MTIME]}), /a size and a time, perhaps with a hash, expected/],
    ['files that are an array', JSON.stringify({files: [], format: 'targon-sync-manifest', version: 1}), /not a sync manifest/],
  ])('refuses %s as a whole', (_what, body, reason) => {
    const parsed = parseManifest(body)
    expect('refused' in parsed && parsed.refused).toMatch(reason)
  })

  it('refuses a manifest over the size bound before parsing it', () => {
    expect(parseManifest(' '.repeat(MAX_MANIFEST_BYTES + 1))).toEqual({refused: 'larger than 64 MiB'})
  })

  it('takes plain relative paths, odd characters included', () => {
    for (const path of ['a', 'a/b/c.txt', "name with spaces & $quotes'", '-rf', 'src/targon-out/x', 'ünïcode/名前'])
      expect(refusedPath(path)).toBeNull()
  })
})

describe('what a sync sends', () => {
  const manifest = new Map([
    ['same.txt', entry()],
    ['touched.txt', entry()],
    ['gone.txt', entry()],
  ])

  it('sends what the VM lacks or holds at another size; compares where a time differs; trusts size and times that agree', () => {
    const remote: Record<string, RemoteState> = {
      'blocked/x': 'blocked',
      'dir.txt': {kind: 'dir', mode: 0o755, mtime: 0, size: 10},
      'new-on-vm.txt': onVm(),
      'other-size.txt': onVm(11),
      'same-mode.txt': onVm(10, Math.floor(MTIME / 1000), 0o600),
      'same.txt': onVm(),
      'touched.txt': onVm(),
      'vm-time.txt': onVm(10, 5),
    }
    const plan = planSync(
      [
        file('missing.txt'),
        file('other-size.txt'),
        file('dir.txt'),
        file('blocked/x'),
        file('same.txt'),
        file('same-mode.txt', 10, MTIME, 0o755),
        file('touched.txt', 10, MTIME + 0.001),
        file('new-on-vm.txt'),
        file('vm-time.txt'),
      ],
      (rel) => remote[rel] ?? null,
      new Map([...manifest, ['same-mode.txt', entry()], ['vm-time.txt', entry()]]),
    )
    expect(plan.send.map((each) => each.rel)).toEqual(['missing.txt', 'other-size.txt', 'dir.txt', 'blocked/x'])
    expect(plan.unchanged.map(({chmod, file: each}) => [each.rel, chmod])).toEqual([
      ['same.txt', false],
      ['same-mode.txt', true],
    ])
    // A change within the second (the manifest's sub-millisecond time), a file the manifest does not know, a time changed on the VM.
    expect(plan.compare.map((each) => each.rel)).toEqual(['touched.txt', 'new-on-vm.txt', 'vm-time.txt'])
    expect(plan.gone).toEqual(['gone.txt'])
  })

  it('sends everything and removes nothing when the manifest was refused', () => {
    const plan = planSync([file('same.txt')], () => onVm(), null)
    expect(plan).toEqual({compare: [], gone: [], send: [file('same.txt')], unchanged: []})
  })
})

describe('what a sync removes', () => {
  it('removes only a file gone locally that the VM still has as placed', () => {
    expect(removal(entry(), onVm(), false)).toBe('remove')
    expect(removal(entry(), onVm(), true)).toBe('keep')
    expect(removal(entry(), onVm(11), false)).toBe('forget')
    expect(removal(entry(), onVm(10, 7), false)).toBe('forget')
    expect(removal(entry(), {kind: 'link', mode: 0o777, mtime: Math.floor(MTIME / 1000), size: 10}, false)).toBe('forget')
    expect(removal(entry(), null, false)).toBe('forget')
    expect(removal(entry(), 'blocked', false)).toBe('forget')
  })
})
