/**
 * The two ends of a copy behind one interface, so that upload and download are the same walk: this machine's
 * filesystem, and the VM's over SFTP. Errors come out as one line naming the path and the side.
 */
import {FS_ERRORS} from '../../core/errors.js'
import {chmod, lstat, mkdir, open, readdir, realpath, rename, stat, unlink, utimes} from 'node:fs/promises'
import {posix, resolve} from 'node:path'
import type {SFTPWrapper, Stats} from 'ssh2'

import type {Kind} from './paths.js'

export interface Entry {
  name: string
  kind: Kind
  /** Permission bits. */
  mode: number
  size: number
  /** Modification time in whole seconds since the epoch (SFTP's resolution). */
  mtime: number
}

/** An open file, read or written at explicit offsets, so that several requests can be in flight at once. */
export interface OpenFile {
  /** Bytes read; 0 at the end of the file. */
  read(buffer: Buffer, length: number, position: number): Promise<number>
  write(buffer: Buffer, length: number, position: number): Promise<void>
  close(): Promise<void>
}

export interface Side {
  /** "on the VM" or "locally", for messages. */
  readonly where: string
  /** Follows symbolic links (for the paths the user named); null when nothing is there. */
  stat(path: string): Promise<Entry | null>
  /** Does not follow a symbolic link. */
  lstat(path: string): Promise<Entry | null>
  /** The entries of a directory as listed, each without following links; "." and ".." left out. */
  list(dir: string): Promise<Entry[]>
  mkdir(path: string, mode: number): Promise<void>
  chmod(path: string, mode: number): Promise<void>
  /** Sets the modification (and access) time, in whole seconds since the epoch. */
  setMtime(path: string, seconds: number): Promise<void>
  /** chmod, then setMtime when `seconds` is given: over SFTP one request for both (a round trip less per file). */
  setModeAndTime(path: string, mode: number, seconds?: number): Promise<void>
  openRead(path: string): Promise<OpenFile>
  /** Creates the file (it must not exist) with the given mode. */
  openWrite(path: string, mode: number): Promise<OpenFile>
  /** Renames over `to`, replacing a file or link there without following it. */
  rename(from: string, to: string): Promise<void>
  remove(path: string): Promise<void>
  realpath(path: string): Promise<string>
}

const S_IFMT = 0o170000
const KINDS: Record<number, Kind> = {0o040000: 'dir', 0o100000: 'file', 0o120000: 'link'}

function kindOf(mode: number): Kind {
  return KINDS[mode & S_IFMT] ?? 'other'
}

/** SFTP status codes (the protocol's, not errno). */
const SFTP_CODES: Record<number, string> = {2: 'no such file or directory', 3: 'permission denied', 4: 'failed'}

/** "PATH: permission denied on the VM", from a local or an SFTP error. */
export function describeFsError(error: unknown, path: string, where: string): string {
  const err = error as Error & {code?: number | string}
  const reason =
    (typeof err.code === 'string' ? FS_ERRORS[err.code] : typeof err.code === 'number' ? SFTP_CODES[err.code] : undefined) ??
    err.message ??
    String(error)
  return `${path}: ${reason} ${where}`
}

export class LocalSide implements Side {
  readonly where = 'locally'

  async stat(path: string): Promise<Entry | null> {
    return entryOrNull(async () => localInfo(await stat(path)), path, this.where)
  }

  async lstat(path: string): Promise<Entry | null> {
    return entryOrNull(async () => localInfo(await lstat(path)), path, this.where)
  }

  async list(dir: string): Promise<Entry[]> {
    const names = await readdir(dir)
    const entries: Entry[] = []
    for (const name of names) {
      const info = await lstat(posix.join(dir, name))
      entries.push({kind: kindOf(info.mode), mode: info.mode & 0o7777, mtime: Math.floor(info.mtimeMs / 1000), name, size: info.size})
    }

    return entries
  }

  async mkdir(path: string, mode: number): Promise<void> {
    await mkdir(path, {mode})
  }

  /** As cp and scp do, the user's umask applies to the modes a download brings along. */
  async chmod(path: string, mode: number): Promise<void> {
    await chmod(path, mode & ~process.umask())
  }

  async setMtime(path: string, seconds: number): Promise<void> {
    await utimes(path, seconds, seconds)
  }

  async setModeAndTime(path: string, mode: number, seconds?: number): Promise<void> {
    await this.chmod(path, mode)
    if (seconds !== undefined) await this.setMtime(path, seconds)
  }

  async openRead(path: string): Promise<OpenFile> {
    return localFile(await open(path, 'r'))
  }

  async openWrite(path: string, mode: number): Promise<OpenFile> {
    return localFile(await open(path, 'wx', mode))
  }

  async rename(from: string, to: string): Promise<void> {
    await rename(from, to)
  }

  async remove(path: string): Promise<void> {
    await unlink(path)
  }

  async realpath(path: string): Promise<string> {
    return realpath(resolve(path))
  }
}

function localFile(handle: import('node:fs/promises').FileHandle): OpenFile {
  return {
    close: () => handle.close(),
    read: async (buffer, length, position) => (await handle.read(buffer, 0, length, position)).bytesRead,
    write: async (buffer, length, position) => {
      for (let done = 0; done < length;) done += (await handle.write(buffer, done, length - done, position + done)).bytesWritten
    },
  }
}

/** Bytes already read, as a file to copy from: a small file the sync has hashed goes as those very bytes. */
export function bytesSide(bytes: Buffer): Pick<Side, 'openRead' | 'where'> {
  return {
    openRead: async () => ({
      close: async () => undefined,
      // Past the end reads nothing, as a file does: a copy of `size` bytes then says the file changed.
      read: async (buffer, length, position) =>
        position >= bytes.length ? 0 : bytes.copy(buffer, 0, position, Math.min(bytes.length, position + length)),
      write: async () => {
        throw new Error('bytes read from a local file cannot be written')
      },
    }),
    where: 'locally',
  }
}

/** A local stat in SFTP's terms: the modification time in whole seconds. */
function localInfo(info: {mode: number; size: number; mtimeMs: number}): {mode: number; size: number; mtime: number} {
  return {mode: info.mode, mtime: Math.floor(info.mtimeMs / 1000), size: info.size}
}

async function entryOrNull(
  read: () => Promise<{mode: number; size: number; mtime: number}>,
  path: string,
  where: string,
): Promise<Entry | null> {
  try {
    const info = await read()
    return {kind: kindOf(info.mode), mode: info.mode & 0o7777, mtime: info.mtime, name: posix.basename(path), size: info.size}
  } catch (error) {
    const code = (error as {code?: number | string}).code
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 2) return null
    throw new Error(describeFsError(error, path, where), {cause: error})
  }
}

/** The VM's filesystem over one SFTP channel. */
/** SFTP's status code for the end of a directory listing. */
const SFTP_EOF = 1
/** The most entries one directory on the VM may list: a hostile server could list without end. */
const MAX_DIR_ENTRIES = 100_000

export class RemoteSide implements Side {
  readonly where = 'on the VM'

  /** Requests not answered yet: a dropped connection fails them, as ssh2 may never answer them. */
  private readonly pending = new Set<(error: Error) => void>()
  private lost: string | null = null

  /** `onLost` registers a callback for when the SSH connection drops. */
  constructor(
    private readonly sftp: SFTPWrapper,
    onLost: (listener: () => void) => void,
  ) {
    onLost(() => this.fail('the SSH connection to the VM was lost'))
    // ssh2 emits a fatal SFTP error (a malformed packet) on this object: unheard, it would end the process.
    sftp.on('error', (error: Error) => this.fail(`the SFTP session on the VM failed: ${error.message}`))
    sftp.on('close', () => this.fail('the SFTP session on the VM ended'))
  }

  /** Why nothing more can be done on this channel (the connection or the SFTP session is gone); null while it works. */
  get lostReason(): string | null {
    return this.lost
  }

  private fail(reason: string): void {
    this.lost ??= reason
    for (const reject of this.pending) reject(new Error(this.lost))
    this.pending.clear()
  }

  private call<T>(run: (done: (error: Error | undefined | null, value?: T) => void) => void): Promise<T> {
    if (this.lost) return Promise.reject(new Error(this.lost))
    return new Promise((resolve, reject) => {
      this.pending.add(reject)
      run((error, value) => {
        this.pending.delete(reject)
        if (error) reject(error)
        else resolve(value as T)
      })
    })
  }

  stat(path: string): Promise<Entry | null> {
    return entryOrNull(() => this.call<Stats>((done) => this.sftp.stat(path, done)), path, this.where)
  }

  lstat(path: string): Promise<Entry | null> {
    return entryOrNull(() => this.call<Stats>((done) => this.sftp.lstat(path, done)), path, this.where)
  }

  /** Read batch by batch, so that a server listing without end is stopped at MAX_DIR_ENTRIES. */
  async list(dir: string): Promise<Entry[]> {
    const handle = await this.call<Buffer>((done) => this.sftp.opendir(dir, done))
    const entries: Entry[] = []
    try {
      for (;;) {
        const batch = await this.call<{filename: string; attrs: {mode: number; size: number; mtime: number}}[]>((done) =>
          this.sftp.readdir(handle, done),
        ).catch((error: {code?: number}) => {
          if (error.code === SFTP_EOF) return null
          throw error
        })
        if (batch === null) return entries
        // readdir's attributes are the server's lstat of each entry: a link shows as a link.
        for (const entry of batch) {
          if (entry.filename === '.' || entry.filename === '..') continue
          entries.push({
            kind: kindOf(entry.attrs.mode),
            mode: entry.attrs.mode & 0o7777,
            mtime: entry.attrs.mtime,
            name: entry.filename,
            size: entry.attrs.size,
          })
        }

        if (entries.length > MAX_DIR_ENTRIES)
          throw new Error(`${dir}: more than ${MAX_DIR_ENTRIES} entries; copy its subdirectories one by one`)
      }
    } finally {
      await this.call((done) => this.sftp.close(handle, done)).catch(() => undefined)
    }
  }

  mkdir(path: string, mode: number): Promise<void> {
    return this.call((done) => this.sftp.mkdir(path, {mode}, done))
  }

  chmod(path: string, mode: number): Promise<void> {
    return this.call((done) => this.sftp.chmod(path, mode, done))
  }

  setMtime(path: string, seconds: number): Promise<void> {
    return this.call((done) => this.sftp.utimes(path, seconds, seconds, done))
  }

  setModeAndTime(path: string, mode: number, seconds?: number): Promise<void> {
    const times = seconds === undefined ? {} : {atime: seconds, mtime: seconds}
    return this.call((done) => this.sftp.setstat(path, {mode, ...times}, done))
  }

  openRead(path: string): Promise<OpenFile> {
    return this.openFile(path, 'r', 0)
  }

  openWrite(path: string, mode: number): Promise<OpenFile> {
    return this.openFile(path, 'wx', mode)
  }

  private async openFile(path: string, flags: 'r' | 'wx', mode: number): Promise<OpenFile> {
    const handle = await this.call<Buffer>((done) => this.sftp.open(path, flags, {mode}, done))
    return {
      close: () => this.call((done) => this.sftp.close(handle, done)),
      read: (buffer, length, position) =>
        this.call<number>((done) => this.sftp.read(handle, buffer, 0, length, position, (error, bytes) => done(error, bytes))),
      write: (buffer, length, position) => this.call((done) => this.sftp.write(handle, buffer, 0, length, position, done)),
    }
  }

  rename(from: string, to: string): Promise<void> {
    // Plain SFTP rename refuses an existing target; OpenSSH's extension replaces it atomically, as rename(2) does.
    return this.call((done) => this.sftp.ext_openssh_rename(from, to, done))
  }

  remove(path: string): Promise<void> {
    return this.call((done) => this.sftp.unlink(path, done))
  }

  realpath(path: string): Promise<string> {
    return this.call((done) => this.sftp.realpath(path === '' ? '.' : path, done))
  }
}
