/** `targon cp`: its path specs, where a copy may write, and the copy engine fed a crafted listing. */
import {EventEmitter} from 'node:events'
import {appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {dirname, join, posix} from 'node:path'
import type {SFTPWrapper} from 'ssh2'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {nameOf, placeRoot, safeJoin, unsafeName} from '../../src/lib/workflows/copy/paths.js'
import {copiedName} from '../../src/lib/workflows/copy/copy.js'
import {type Entry, LocalSide, type OpenFile, RemoteSide, type Side, bytesSide} from '../../src/lib/workflows/copy/sides.js'
import {parseCopySpec, parsePathSpec} from '../../src/lib/workflows/copy/spec.js'
import {CopyBar, size} from '../../src/lib/workflows/copy/progress.js'
import {copyFile, copyTree} from '../../src/lib/workflows/copy/tree.js'
import {TargonError} from '../../src/lib/core/errors.js'
import {tempDir} from '../helpers/cli.js'
import {fakeClock} from '../helpers/fake-clock.js'

describe('path specs', () => {
  it('reads VM:PATH as scp does: a colon counts only before the first slash', () => {
    expect(parsePathSpec('worker1:/data')).toEqual({kind: 'remote', path: '/data', vm: 'worker1'})
    expect(parsePathSpec('worker1:')).toEqual({kind: 'remote', path: '', vm: 'worker1'})
    expect(parsePathSpec(':/data')).toEqual({kind: 'remote', path: '/data', vm: null})
    expect(parsePathSpec('vm:a:b')).toEqual({kind: 'remote', path: 'a:b', vm: 'vm'})
    // ~ is the VM's home (SFTP would take it as a file name); another user's home is refused.
    expect(parsePathSpec('vm:~/f')).toEqual({kind: 'remote', path: 'f', vm: 'vm'})
    expect(parsePathSpec('vm:~')).toEqual({kind: 'remote', path: '', vm: 'vm'})
    expect(parseCopySpec('./f', 'vm:~/')).toMatchObject({intoDirectory: true, remote: ''})
    expect(() => parsePathSpec('vm:~root/f')).toThrow(/only the VM's own home/)
    for (const local of ['./a:b', '/tmp/a:b', 'dir/x:y', 'plain', '.', '/'])
      expect(parsePathSpec(local)).toEqual({kind: 'local', path: local})
  })

  it('takes one local and one remote side, and tells the direction', () => {
    expect(parseCopySpec('./in', 'vm:/data')).toEqual({direction: 'upload', intoDirectory: false, local: './in', remote: '/data', vm: 'vm'})
    expect(parseCopySpec('vm:/out/', './out/')).toEqual({
      direction: 'download',
      intoDirectory: true,
      local: './out/',
      remote: '/out/',
      vm: 'vm',
    })
    expect(parseCopySpec('./in', ':/data/')).toMatchObject({direction: 'upload', intoDirectory: true, vm: null})
    for (const [source, destination] of [
      ['./a', './b'],
      ['a:/x', 'b:/y'],
      [':/x', ':/y'],
      ['', 'vm:/x'],
      ['vm:/x', ''],
      ['./a\0b', 'vm:/x'],
    ]) {
      const error = (() => {
        try {
          parseCopySpec(source as string, destination as string)
        } catch (caught) {
          return caught
        }
      })()
      expect(error, `${source} ${destination}`).toBeInstanceOf(TargonError)
      expect((error as TargonError).exitCode).toBe(2)
    }
  })
})

describe('safe joins', () => {
  it('accepts plain names and refuses "..", "/", NUL and empty components', () => {
    expect(unsafeName('data.bin')).toBeNull()
    expect(unsafeName('..a')).toBeNull()
    expect(unsafeName('...')).toBeNull()
    for (const bad of ['', '.', '..', 'a/b', '/', 'x\0y']) expect(unsafeName(bad), JSON.stringify(bad)).not.toBeNull()
    expect(safeJoin('/dst', '')).toBe('/dst')
    expect(safeJoin('/dst', 'a/b c/d')).toBe('/dst/a/b c/d')
    expect(safeJoin('/', 'etc')).toBe('/etc')
    expect(safeJoin('out/', 'x')).toBe('out/x')
    // "." is the working directory (or the home directory on the VM): its paths are the relative parts themselves.
    expect(safeJoin('.', 'a')).toBe('a')
    expect(safeJoin('./', 'a/b')).toBe('a/b')
    expect(safeJoin('.', '')).toBe('.')
    for (const bad of ['..', '../x', 'a/../../x', '/etc/passwd', './a']) expect(() => safeJoin('.', bad), bad).toThrow(/refusing the path/)
    for (const bad of ['..', '../x', 'a/../../x', '/etc/passwd', 'a//b', './a', 'a/.', 'a/'])
      expect(() => safeJoin('/dst', bad), bad).toThrow(/refusing the path/)
  })

  it('never yields a path outside the root, whatever the relative part', () => {
    const part = fc.oneof(fc.constantFrom('..', '.', '', '/', 'a', '..a', 'b/..', '\0'), fc.string())
    fc.assert(
      fc.property(fc.array(part, {maxLength: 6}), fc.constantFrom('/dst', '/dst/', 'dst', '/', '.', './'), (parts, root) => {
        let joined: string
        try {
          joined = safeJoin(root, parts.join('/'))
        } catch {
          return true
        }

        const inside = posix.relative(posix.resolve('/cwd', root), posix.resolve('/cwd', joined))
        return joined === root || (inside !== '' && inside !== '..' && !inside.startsWith('../') && !posix.isAbsolute(inside))
      }),
      {numRuns: 2000},
    )
  })

  it('places the copy as scp does', () => {
    const file = {kind: 'file' as const, name: 'notes.txt'}
    const dir = {kind: 'dir' as const, name: 'data'}
    expect(placeRoot(file, {intoDirectory: false, kind: 'dir', path: '/box'})).toBe('/box/notes.txt')
    expect(placeRoot(file, {intoDirectory: false, kind: null, path: '/box/new.txt'})).toBe('/box/new.txt')
    expect(placeRoot(file, {intoDirectory: false, kind: 'file', path: '/box/old.txt'})).toBe('/box/old.txt')
    expect(placeRoot(dir, {intoDirectory: true, kind: 'dir', path: '/box/'})).toBe('/box/data')
    expect(placeRoot(dir, {intoDirectory: false, kind: null, path: '/copy'})).toBe('/copy')
    expect(() => placeRoot(file, {intoDirectory: true, kind: null, path: '/nodir/'})).toThrow('/nodir/: no such directory')
    expect(() => placeRoot(dir, {intoDirectory: false, kind: 'file', path: '/f'})).toThrow('/f: exists and is not a directory')
    expect(nameOf('/srv/data/')).toBe('data')
    expect(nameOf('.')).toBe('.')
  })
})

/** A source side whose listing is whatever the test says, as a hostile server could send it. */
class CraftedSide implements Side {
  readonly where = 'on the VM'

  constructor(private readonly listing: Record<string, (Entry & {content?: string})[]>) {}

  async stat(path: string): Promise<Entry | null> {
    return this.listing[path] ? {kind: 'dir', mode: 0o755, mtime: 0, name: nameOf(path), size: 0} : null
  }

  lstat(path: string): Promise<Entry | null> {
    return this.stat(path)
  }

  async list(dir: string): Promise<Entry[]> {
    return this.listing[dir] ?? []
  }

  async openRead(path: string): Promise<OpenFile> {
    const entry = this.listing[dirname(path)]?.find((each) => path.endsWith(`/${each.name}`))
    const content = Buffer.from(entry?.content ?? '')
    return {
      close: async () => {},
      read: async (buffer, length, position) => content.copy(buffer, 0, position, position + length),
      write: async () => {},
    }
  }

  async mkdir(): Promise<void> {}
  async chmod(): Promise<void> {}
  async setMtime(): Promise<void> {}
  async setModeAndTime(): Promise<void> {}
  openWrite(): never {
    throw new Error('read-only')
  }

  async rename(): Promise<void> {}
  async remove(): Promise<void> {}
  async realpath(path: string): Promise<string> {
    return path
  }
}

describe('the copy engine, fed a crafted listing', () => {
  it('refuses names that would leave the destination and writes nothing outside it', async () => {
    const file = (name: string, content = name): Entry & {content: string} => ({
      content,
      kind: 'file',
      mode: 0o644,
      mtime: 0,
      name,
      size: content.length,
    })
    const from = new CraftedSide({
      '/src': [
        file('good.txt', 'good'),
        file('../escape.txt'),
        file('/etc/evil'),
        file('..'),
        file('.'),
        file(''),
        {kind: 'dir', mode: 0o755, mtime: 0, name: '..', size: 0},
        {kind: 'dir', mode: 0o755, mtime: 0, name: 'sub', size: 0},
      ],
      '/src/sub': [file('inner.txt', 'inner'), file('a/../../../../x')],
    })
    const outer = tempDir('targon-cp-unit-')
    const dest = join(outer, 'dest')
    mkdirSync(dest)
    const outcome = await copyTree(
      from,
      new LocalSide(),
      '/src',
      {kind: 'dir', mode: 0o755, mtime: 0, name: 'src', size: 0},
      join(dest, 'src'),
      'src',
      {
        lost: () => null,
      },
    )
    expect(outcome.copied).toEqual(['src/good.txt', 'src/sub/inner.txt'])
    expect(outcome.failed.map((each) => each.error).sort()).toEqual(
      [
        'refused a name with "/" in the listing on the VM',
        'refused a name with "/" in the listing on the VM',
        'refused a name with "/" in the listing on the VM',
        'refused an empty name in the listing on the VM',
        'refused the name "." in the listing on the VM',
        'refused the name ".." in the listing on the VM',
        'refused the name ".." in the listing on the VM',
      ].sort(),
    )
    expect(readdirSync(outer)).toEqual(['dest'])
    expect(readdirSync(join(dest, 'src')).sort()).toEqual(['good.txt', 'sub'])
    expect(readFileSync(join(dest, 'src', 'sub', 'inner.txt'), 'utf8')).toBe('inner')
    expect(existsSync('/x') || existsSync(join(outer, 'escape.txt'))).toBe(false)
  })
})

describe("the copied root's name", () => {
  /** A side whose realpath answers what a hostile VM could. */
  const answering = (answer: string): Side => Object.assign(new CraftedSide({}), {realpath: async () => answer})

  it('is the real name for ".", ".." or the home directory, and refuses an answer that is not one plain name', async () => {
    expect(await copiedName(answering('/home/ubuntu'), '.')).toBe('ubuntu')
    expect(await copiedName(answering('/srv/data/'), '..')).toBe('data')
    expect(await copiedName(answering('/ignored'), '/srv/in')).toBe('in')
    for (const answer of ['..', '../..', '/', '', 'x/..', '.'])
      await expect(copiedName(answering(answer), '.'), JSON.stringify(answer)).rejects.toThrow(TargonError)
  })
})

/** Enough of ssh2's SFTP object for RemoteSide: requests that are never answered, and its events. */
class SilentSftp extends EventEmitter {
  stat(_path: string, _done: (error: Error | undefined) => void): void {}
}

describe('the SFTP side', () => {
  it('turns a fatal SFTP error into failed requests, not a crash', async () => {
    const sftp = new SilentSftp()
    const remote = new RemoteSide(sftp as unknown as SFTPWrapper, () => {})
    const pending = remote.stat('/home/ubuntu/a')
    // ssh2 emits this on a protocol error; with nobody listening, it would end the process.
    expect(() => sftp.emit('error', Object.assign(new Error('Malformed DATA packet'), {level: 'sftp-protocol'}))).not.toThrow()
    await expect(pending).rejects.toThrow('the SFTP session on the VM failed: Malformed DATA packet')
    await expect(remote.stat('/home/ubuntu/b')).rejects.toThrow('the SFTP session on the VM failed')
    expect(remote.lostReason).toBe('the SFTP session on the VM failed: Malformed DATA packet')
  })

  it('stops a directory listing without end at 100000 entries, and closes the handle', async () => {
    // A hostile SFTP server: every batch of the listing has more entries, and the end never comes.
    let closed = false
    let served = 0
    const sftp = Object.assign(new SilentSftp(), {
      close: (_handle: Buffer, done: () => void) => ((closed = true), done()),
      opendir: (_path: string, done: (error: undefined, handle: Buffer) => void) => done(undefined, Buffer.from('h')),
      readdir: (_handle: Buffer, done: (error: undefined, list: unknown[]) => void) =>
        setImmediate(() =>
          done(
            undefined,
            Array.from({length: 1000}, () => ({attrs: {mode: 0o100644, size: 1}, filename: `f${served++}`})),
          ),
        ),
    })
    const remote = new RemoteSide(sftp as unknown as SFTPWrapper, () => {})
    await expect(remote.list('/home/ubuntu/big')).rejects.toThrow('/home/ubuntu/big: more than 100000 entries')
    expect(served).toBeLessThanOrEqual(101_000)
    expect(closed).toBe(true)
  })

  it('fails what is pending when the SFTP channel closes', async () => {
    const sftp = new SilentSftp()
    const remote = new RemoteSide(sftp as unknown as SFTPWrapper, () => {})
    const pending = remote.stat('/home/ubuntu/a')
    sftp.emit('close')
    await expect(pending).rejects.toThrow('the SFTP session on the VM ended')
  })
})

describe('a file that changes during the copy', () => {
  it('fails when it grew, and is never left under its final name', async () => {
    const src = tempDir('targon-cp-grow-')
    const dest = tempDir('targon-cp-grow-dest-')
    const path = join(src, 'log.bin')
    writeFileSync(path, Buffer.alloc(4 * 1024 * 1024, 7))
    const entry = (await new LocalSide().stat(path)) as Entry
    let appended = false
    const outcome = await copyTree(new LocalSide(), new LocalSide(), path, entry, join(dest, 'log.bin'), 'log.bin', {
      lost: () => null,
      onProgress: (progress) => {
        if (appended || progress.bytes === 0) return
        appended = true
        appendFileSync(path, 'more')
      },
    })
    expect(appended).toBe(true)
    expect(outcome.copied).toEqual([])
    expect(outcome.failed).toEqual([{error: `${path}: changed while being copied locally`, path: 'log.bin'}])
    expect(readdirSync(dest)).toEqual([])
  })

  it('fails alike when the bytes read for the sync are fewer or more than the file had when listed', async () => {
    const dest = tempDir('targon-cp-bytes-dest-')
    const file = {mode: 0o644, size: 200_000, source: '/src/data.bin', target: join(dest, 'data.bin')}
    for (const bytes of [Buffer.alloc(100_000, 1), Buffer.alloc(200_001, 1)])
      await expect(copyFile(bytesSide(bytes), new LocalSide(), file, {lost: () => null}, () => undefined)).rejects.toThrow(
        '/src/data.bin: changed while being copied locally',
      )
    expect(readdirSync(dest)).toEqual([])
    await copyFile(bytesSide(Buffer.alloc(200_000, 1)), new LocalSide(), file, {lost: () => null}, () => undefined)
    expect(readFileSync(join(dest, 'data.bin'))).toEqual(Buffer.alloc(200_000, 1))
  })
})

describe('the progress bar', () => {
  it('draws one line in place with the sums of every VM, and erases it', async () => {
    let written = ''
    const stream = {columns: 120, write: (text: string) => (written += text)} as unknown as NodeJS.WriteStream
    const clock = fakeClock(1000)
    const bar = new CopyBar(2, stream, clock)
    bar.update('a', {bytes: 512, files: 1, totalBytes: 1024, totalFiles: 2})
    await clock.sleep(110)
    bar.update('b', {bytes: 0, files: 0, totalBytes: 1024, totalFiles: 2})
    bar.finish('a')
    expect(written.split('\r\u001B[2K').filter(Boolean).at(-1)).toBe('[######..................]  25%  1/4 files  512 B/2.0 KiB  1/2 VMs')
    bar.clear()
    expect(written.endsWith('\r\u001B[2K')).toBe(true)
    expect(size(3 * 1024 * 1024)).toBe('3.0 MiB')
  })
})
