/**
 * The sync of a working directory to a directory on a VM, over the VM's pinned SSH connection: one remote command
 * for the listings (SFTP when it cannot give them, listing.ts), SFTP for files, one remote command for content
 * hashes. What goes follows git's ignore rules and never includes targon's secrets (walk.ts, held-back.ts); what
 * need not be sent again, and what may be removed on the VM, follows the manifest of earlier syncs (manifest.ts,
 * whose header says how a file is judged unchanged: size and mtime, then SHA-256 only where the times differ; its
 * file on the VM: manifest-file.ts).
 *
 * On the VM: files are written under a temporary name and renamed into place whole (as `targon cp` does), with the
 * local permission bits (the executable bit included) and the local mtime in whole seconds, so that the next sync
 * can compare. Directories are made 0755, never through a symbolic link. A file is removed only when an earlier sync
 * of this local directory placed it, it is gone locally, and the VM still has it as placed; a file the VM made or
 * changed is never touched. Directories are not removed. The manifest is written last, also after a partial failure,
 * so that it always names what is there; it lives outside the synced directory, which the VM's user may rewrite.
 * After a whole sync, the caller has the files while the manifest is still being written (Synced.manifest): `targon
 * run` starts its job meanwhile, which took 20 ms of a second run (figure 16).
 */
import {createHash} from 'node:crypto'
import {createReadStream, readFileSync} from 'node:fs'
import {lstat, stat} from 'node:fs/promises'
import {posix} from 'node:path'

import {mapBounded} from '../../core/concurrency.js'
import {TargonError, abortError, isAbortError} from '../../core/errors.js'
import {safeJoin} from '../copy/paths.js'
import {type Entry, LocalSide, RemoteSide, bytesSide} from '../copy/sides.js'
import {copyFile, ensureDir, partialOf} from '../copy/tree.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {MAX_MANIFEST_BYTES, type ManifestEntry, type RemoteState, planSync, remoteSeconds, removal, serializeManifest} from './manifest.js'
import {type ManifestRead, listByCommand, readByCommand} from './listing.js'
import {makeDirectory, readManifest, writeManifest} from './manifest-file.js'
import {type LocalFile, type LocalTree, walkLocal} from './walk.js'
import type {NeverSentDir} from './held-back.js'

export interface SyncReport {
  /** Files whose bytes were sent this time. */
  files_sent: number
  bytes_sent: number
  /** Files removed on the VM because an earlier sync of this local dir sent them and they are gone locally. */
  files_removed: number
  /** Symbolic links not sent (each also warned about). */
  links_skipped: number
}

export interface Synced {
  report: SyncReport
  /** The manifest's write, under way once every file is in place; fails with COPY_FAILED. */
  manifest: Promise<void>
}

export interface SyncOptions {
  /** Absolute local directory to sync. */
  localDir: string
  /** Absolute directory on the VM (created if missing, owned by ubuntu). */
  remoteDir: string
  /** Absolute path on the VM of this (VM, local dir) pair's manifest, outside remoteDir. */
  manifestPath: string
  warn: (message: string) => void
  signal?: AbortSignal
  /** The directories never sent, whatever the ignore files say (held-back.ts, neverSentDirs). */
  neverSent: readonly NeverSentDir[]
  /** The local tree (walkLocal of localDir), when its walk was started earlier: run walks while the VM connects. */
  walked?: Promise<LocalTree>
}

/** Files in flight at once: each costs several round trips (open, write, close, chmod, times, rename) besides its bytes. */
const PARALLEL_FILES = 8
/** Directories listed at once on the VM. */
const PARALLEL_LISTINGS = 8
/** Local files hashed at once. */
const PARALLEL_HASHES = 4

export async function syncWorkdir(session: SshSession, options: SyncOptions): Promise<Synced> {
  await checkOptions(options)
  const tree = await (options.walked ?? walkLocal(options.localDir, {neverSent: options.neverSent})).catch((error: unknown) => {
    if (error instanceof TargonError) throw error
    throw new TargonError('COPY_FAILED', `the sync of ${options.localDir} failed locally: ${oneLine(error)}`, {
      cause: error,
      hint: 'check the permissions of the directory, or ignore what cannot be read',
    })
  })
  const report: SyncReport = {bytes_sent: 0, files_removed: 0, files_sent: 0, links_skipped: 0}
  for (const held of tree.heldBack) {
    if (held.kind === 'link') report.links_skipped++
    options.warn(`${held.path}: not synced: ${held.reason}`)
  }

  // The VM's listing and the manifest (remote commands) come while the SFTP channel opens; null: read over SFTP.
  const listed = listByCommand(session, options.remoteDir, tree.dirs, options.signal)
  const manifestRead = readByCommand(session, options.manifestPath, MAX_MANIFEST_BYTES, options.signal)
  const sftp = await session.sftp()
  // The session outlives the sync (`targon run` goes on to start the job on it): its listener goes with the channel.
  let stopListening = () => {}
  const remote = new RemoteSide(sftp, (listener) => (stopListening = session.onLost(listener)))
  const close = () => {
    stopListening()
    sftp.end()
  }
  const failed = (error: unknown) => {
    if (error instanceof TargonError || isAbortError(error)) return error
    return new TargonError('COPY_FAILED', `the sync of ${options.localDir} to the VM failed: ${oneLine(error)}`, {cause: error})
  }
  try {
    const {written} = await syncTree(session, remote, tree, options, report, {listed, manifestRead})
    return {
      manifest: written.then(close, (error: unknown) => {
        close()
        throw failed(error)
      }),
      report,
    }
  } catch (error) {
    close()
    throw failed(error)
  }
}

async function checkOptions(options: SyncOptions): Promise<void> {
  const {localDir, manifestPath, remoteDir} = options
  for (const path of [remoteDir, manifestPath])
    if (!posix.isAbsolute(path) || posix.normalize(path) !== path || path === '/')
      throw new Error(`sync: ${path} is not a plain absolute path`)
  if (manifestPath.startsWith(`${remoteDir}/`)) throw new Error(`sync: the manifest ${manifestPath} must be outside ${remoteDir}`)
  const local = posix.isAbsolute(localDir) ? await stat(localDir).catch(() => null) : null
  if (!local?.isDirectory())
    throw new TargonError('NOT_FOUND', `${localDir}: no such directory`, {hint: 'name an existing local directory to sync'})
}

async function syncTree(
  session: SshSession,
  remote: RemoteSide,
  tree: LocalTree,
  options: SyncOptions,
  report: SyncReport,
  early: {listed: Promise<Map<string, Entry[]> | null>; manifestRead: Promise<ManifestRead>},
): Promise<{written: Promise<void>}> {
  const {localDir, remoteDir, signal} = options
  const lost = () => (session.closed ? 'the SSH connection to the VM was lost' : remote.lostReason)
  const stopped = () => {
    if (signal?.aborted) throw abortError(signal)
    const reason = lost()
    if (reason) throw new TargonError('SSH_FAILED', reason, {hint: 'run the sync again: it sends only what is not there yet'})
  }

  // The VM's side of the local tree is listed while the manifest is read (and parsed, as soon as it is there); the
  // directories only the manifest names (of files gone locally) need a second look, with the first one's.
  const manifestRead = early.manifestRead.then((read) => readManifest(remote, options, read))
  manifestRead.catch(() => undefined)
  await makeDirectory(remote, remoteDir)
  const prelisted = await early.listed
  const [manifest, treeView] = await Promise.all([manifestRead, viewRemote(remote, remoteDir, tree.dirs, prelisted)])
  const known = new Set(tree.dirs)
  const onlyInManifest = [...(manifest?.keys() ?? [])].map((rel) => posix.dirname(rel)).filter((dir) => dir !== '.' && !known.has(dir))
  const view = onlyInManifest.length === 0 ? treeView : await viewRemote(remote, remoteDir, [...tree.dirs, ...onlyInManifest], prelisted)
  const plan = planSync(tree.files, view.at, manifest)
  stopped()

  const failures: string[] = []
  const placed = new Map<string, ManifestEntry>()
  const place = (file: LocalFile, sha256: string | undefined) =>
    placed.set(file.rel, {mtime_ms: file.mtimeMs, size: file.size, ...(sha256 === undefined ? {} : {sha256})})
  const target = (rel: string) => safeJoin(remoteDir, rel)
  /** Runs one step on a file; a failure is noted (one line) and the others go on. */
  const attempt = async (rel: string, step: () => Promise<void>): Promise<boolean> => {
    try {
      await step()
      return true
    } catch (error) {
      failures.push(lost() ?? `${rel}: ${oneLine(error)}`)
      return false
    }
  }

  // Files already there: the permission bits set where they differ, and the time where only the contents agreed.
  const compared = await compareContents(session, plan.compare, (file) => recordedHash(file, manifest, view.at(file.rel)), options)
  const same = new Set([...compared].filter(([, each]) => each.same).map(([rel]) => rel))
  const modeDiffers = (file: LocalFile) => {
    const there = view.at(file.rel)
    return there !== null && there !== 'blocked' && (there.mode & 0o777) !== file.mode
  }
  // The hash a placed file is recorded with: this run's, else the manifest's (of the unchanged).
  const hashOf = (file: LocalFile) => compared.get(file.rel)?.sha256 ?? manifest?.get(file.rel)?.sha256
  // An unchanged file is recorded as it was: the manifest's entry has its size and time.
  for (const {chmod, file} of plan.unchanged) if (!chmod) placed.set(file.rel, manifest?.get(file.rel) as ManifestEntry)
  const touch = [
    ...plan.unchanged.filter(({chmod}) => chmod).map(({file}) => ({chmod: true, file, setTime: false})),
    ...plan.compare.filter((file) => same.has(file.rel)).map((file) => ({chmod: modeDiffers(file), file, setTime: true})),
  ]
  await mapBounded(touch, PARALLEL_FILES, async ({chmod, file, setTime}) => {
    const ok = await attempt(file.rel, async () => {
      if (chmod) await remote.chmod(target(file.rel), file.mode)
      if (setTime) await remote.setMtime(target(file.rel), remoteSeconds(file.mtimeMs))
    })
    if (ok) place(file, hashOf(file))
  })
  stopped()

  const broken = await makeDirectories(remote, remoteDir, tree.dirs, view, failures)
  const local = new LocalSide()
  const send = plan.send.concat(plan.compare.filter((file) => !same.has(file.rel)))
  await mapBounded(send, PARALLEL_FILES, async (file) => {
    if (signal?.aborted || lost()) return
    const under = broken.find((dir) => file.rel.startsWith(`${dir}/`))
    if (under !== undefined) {
      failures.push(`${file.rel}: its directory ${under} could not be made on the VM`)
      return
    }

    // Hashed as it goes, so that the next sync can tell its contents from the manifest (compareContents): a small
    // file is read once, and those bytes are hashed and sent; a larger one is hashed before it is sent.
    const source = posix.join(localDir, file.rel)
    const bytes = file.size <= READ_WHOLE_BYTES ? readSmall(source) : undefined
    const sha256 = bytes ? sha256Of(bytes) : await hashLocal(source, file.size).catch(() => undefined)
    const ok = await attempt(file.rel, () =>
      copyFile(
        bytes ? bytesSide(bytes) : local,
        remote,
        {
          mode: file.mode,
          mtime: remoteSeconds(file.mtimeMs),
          size: file.size,
          source,
          target: target(file.rel),
        },
        {lost, signal},
        () => undefined,
      ),
    )
    if (!ok) return
    place(file, sha256)
    report.files_sent++
    report.bytes_sent += file.size
  })

  // What an earlier sync cut short left (a dropped connection does): temporary copies of the tree's own files.
  for (const rel of view.partials(tree.files)) {
    if (signal?.aborted || lost()) break
    await attempt(rel, () => remote.remove(target(rel)))
  }

  for (const rel of plan.gone) {
    if (signal?.aborted || lost()) break
    const entry = manifest?.get(rel) as ManifestEntry
    const there = view.at(rel)
    const existsLocally = await lstat(posix.join(localDir, rel)).then(
      () => true,
      () => false,
    )
    const what = removal(entry, there, existsLocally)
    if (what === 'keep') placed.set(rel, entry)
    else if (what === 'forget' && there !== null && there !== 'blocked')
      options.warn(`${rel}: left on the VM: gone locally, but changed there since it was synced`)
    else if (what === 'remove') {
      if (await attempt(rel, () => remote.remove(target(rel)))) report.files_removed++
      else placed.set(rel, entry)
    }
  }

  // Entries of files this run did not get to stay: what was placed before is still there.
  for (const file of tree.files)
    if (!placed.has(file.rel) && manifest?.has(file.rel)) placed.set(file.rel, manifest.get(file.rel) as ManifestEntry)
  // Serialized on a later turn of the event loop: run's start of the job goes out to the VM first.
  const written = lost()
    ? Promise.resolve()
    : new Promise((resolve) => setImmediate(resolve)).then(() => writeManifest(remote, options.manifestPath, serializeManifest(placed)))
  // A whole sync returns with the write under way (in an object: a promise returned by an async function is awaited).
  if (failures.length === 0 && !signal?.aborted && !lost()) return {written}
  await written
  stopped()
  if (failures.length > 0) {
    const more = failures.length > 1 ? ` (and ${failures.length - 1} more)` : ''
    throw new TargonError('COPY_FAILED', `the sync of ${localDir} to the VM failed: ${failures[0]}${more}`, {
      hint: 'files under their final names on the VM are whole; run the sync again to send the rest',
    })
  }
  return {written}
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
}

/** The tree's directories made on the VM where missing, parents first; those that could not be made (so nothing goes below). */
async function makeDirectories(remote: RemoteSide, root: string, dirs: string[], view: RemoteView, failures: string[]): Promise<string[]> {
  const broken: string[] = []
  for (const dir of dirs) {
    if (dir === '' || view.isDirectory(dir)) continue
    if (broken.some((each) => dir.startsWith(`${each}/`))) continue
    try {
      await ensureDir(remote, safeJoin(root, dir), 0o755)
    } catch (error) {
      broken.push(dir)
      failures.push(oneLine(error))
    }
  }

  return broken
}

interface RemoteView {
  /** The VM's lstat of a path of the tree. */
  at: (rel: string) => RemoteState
  isDirectory: (dir: string) => boolean
  /** The temporary copies (copy/tree.ts, partialPath) of these files that lie beside them: regular files, by name. */
  partials: (files: LocalFile[]) => string[]
}

/**
 * The VM's side of the tree, from the listings of the directories that matter (each needed directory and its
 * parents), level by level: a directory's listing gives the lstat of every entry, one round trip for many files. A
 * directory the VM has as a link or a file blocks everything below it. The listings one remote command gave
 * (listing.ts) count only where their parent's listing shows a real directory; the others are listed over SFTP.
 */
async function viewRemote(remote: RemoteSide, root: string, needed: string[], prelisted: Map<string, Entry[]> | null): Promise<RemoteView> {
  const listings = new Map<string, Map<string, Entry> | 'absent' | 'blocked'>()
  const wanted = new Set<string>([''])
  for (const dir of needed) for (let each = dir === '.' ? '' : dir; each !== ''; each = parentOf(each)) wanted.add(each)
  const levels = new Map<number, string[]>()
  for (const dir of wanted) {
    const depth = dir === '' ? 0 : dir.split('/').length
    const level = levels.get(depth)
    if (level) level.push(dir)
    else levels.set(depth, [dir])
  }

  for (const depth of [...levels.keys()].sort((a, b) => a - b)) {
    await mapBounded(levels.get(depth) as string[], PARALLEL_LISTINGS, async (dir) => {
      const parent = dir === '' ? null : listings.get(parentOf(dir))
      const entry = parent instanceof Map ? parent.get(posix.basename(dir)) : undefined
      if (parent === 'absent' || parent === 'blocked') listings.set(dir, parent)
      else if (parent && !entry) listings.set(dir, 'absent')
      else if (parent && entry?.kind !== 'dir') listings.set(dir, 'blocked')
      else {
        const entries = prelisted?.get(dir) ?? (await remote.list(dir === '' ? root : safeJoin(root, dir)))
        listings.set(dir, new Map(entries.map((each) => [each.name, each])))
      }
    })
  }

  const at = (rel: string): RemoteState => {
    const listing = listings.get(parentOf(rel))
    if (listing === 'blocked') return 'blocked'
    const entry = listing === 'absent' ? undefined : listing?.get(rel.slice(rel.lastIndexOf('/') + 1))
    return entry ?? null
  }

  const isDirectory = (dir: string) => listings.get(dir) instanceof Map
  const partials = (files: LocalFile[]) => {
    const found = [...listings].flatMap(([dir, listing]) =>
      listing instanceof Map
        ? [...listing.values()]
            .filter((entry) => entry.kind === 'file' && entry.name.includes('.targon-part-') && partialOf(entry.name) !== null)
            .map((entry) => ({dir, name: entry.name}))
        : [],
    )
    // Mostly there are none: the tree's names are looked at only when there are.
    if (found.length === 0) return []
    const stems = new Set(files.map((file) => posix.join(parentOf(file.rel), posix.basename(file.rel).slice(0, 180))))
    return found.filter(({dir, name}) => stems.has(posix.join(dir, partialOf(name) as string))).map(({dir, name}) => posix.join(dir, name))
  }

  return {at, isDirectory, partials}
}

function parentOf(rel: string): string {
  const slash = rel.lastIndexOf('/')
  return slash < 0 ? '' : rel.slice(0, slash)
}

/**
 * The hash of the VM's file as the manifest recorded it when the file was placed; undefined when the manifest cannot
 * tell (no hash recorded, or the VM's file is no longer as placed: then only the VM can say).
 */
function recordedHash(file: LocalFile, manifest: ReadonlyMap<string, ManifestEntry> | null, there: RemoteState): string | undefined {
  const entry = manifest?.get(file.rel)
  if (!entry?.sha256 || there === null || there === 'blocked') return undefined
  return there.size === entry.size && there.mtime === remoteSeconds(entry.mtime_ms) ? entry.sha256 : undefined
}

/**
 * The contents of files whose size agrees but whose time does not: each is hashed (SHA-256) locally, and compared with
 * the hash the manifest recorded when it was placed while the VM's file is still as placed (`recorded`); only the
 * others are hashed on the VM, with sha256sum, all in one remote command. The names go over stdin, NUL-separated,
 * never through the remote shell; the answer is bounded and only the names asked for count. A file that could not be
 * hashed is sent. The manifest's hashes took the VM's command off a second run with one changed file (figure 16).
 */
async function compareContents(
  session: SshSession,
  files: LocalFile[],
  recorded: (file: LocalFile) => string | undefined,
  options: SyncOptions,
): Promise<Map<string, {sha256: string | undefined; same: boolean}>> {
  const localHashes = await mapBounded(files, PARALLEL_HASHES, (file) =>
    hashLocal(posix.join(options.localDir, file.rel), file.size).catch(() => undefined),
  )
  const compared = new Map<string, {sha256: string | undefined; same: boolean}>()
  const ask: LocalFile[] = []
  for (const [index, file] of files.entries()) {
    const sha256 = localHashes[index]
    const known = recorded(file)
    if (known === undefined && sha256 !== undefined) ask.push(file)
    compared.set(file.rel, {same: sha256 !== undefined && sha256 === known, sha256})
  }

  if (ask.length === 0) return compared
  const asked = new Set(ask.map((file) => file.rel))
  const names = ask.map((file) => `./${file.rel}`)
  const result = await session.exec(`cd -- ${shellQuote(options.remoteDir)} && LC_ALL=C xargs -0 -r sha256sum -z --`, {
    maxBytes: names.reduce((sum, name) => sum + Buffer.byteLength(name) + 80, 4096),
    signal: options.signal,
    stdin: names.join('\0'),
  })
  for (const record of result.stdout.split('\0')) {
    const match = /^([0-9a-f]{64}) [ *]\.\/(.+)$/s.exec(record)
    const each = match && asked.has(match[2] as string) ? compared.get(match[2] as string) : undefined
    if (each) each.same = each.sha256 === match?.[1]
  }

  return compared
}

/**
 * Files up to this size are hashed from one synchronous read: a stream's set-up, or an asynchronous read's hops through
 * the thread pool while the listing's answer is being parsed, cost 10-20 ms more than the hash of a small file.
 */
const READ_WHOLE_BYTES = 1024 * 1024

/** A small file's bytes; undefined when it cannot be read (the copy from disk then says why). */
function readSmall(path: string): Buffer | undefined {
  try {
    return readFileSync(path)
  } catch {
    return undefined
  }
}

function sha256Of(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function hashLocal(path: string, size: number): Promise<string> {
  if (size <= READ_WHOLE_BYTES) return sha256Of(readFileSync(path))
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(path)
      .on('error', reject)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
  })
}
