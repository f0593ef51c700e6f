/**
 * The sync of a working directory to a directory on a VM, over the VM's pinned SSH connection: one remote command
 * for the listings (SFTP when it cannot give them, listing.ts), SFTP for files, one remote command for content
 * hashes. What goes follows git's ignore rules (walk.ts); what need not be sent again, and what may be removed on the
 * VM, follows the manifest of earlier syncs (manifest.ts, whose header says how a file is judged unchanged: size and
 * mtime, then SHA-256 only where the times differ; its file on the VM: manifest-file.ts).
 *
 * On the VM: files are written under a temporary name and renamed into place whole (as `targon cp` does), with the
 * local permission bits (the executable bit included) and the local mtime in whole seconds, so that the next sync
 * can compare. Directories are made 0755, never through a symbolic link. A file is removed only when an earlier sync
 * of this local directory placed it, it is gone locally, and the VM still has it as placed; a file the VM made or
 * changed is never touched. Directories are not removed. The manifest is written last, also after a partial failure,
 * so that it always names what is there; it lives outside the synced directory, which the VM's user may rewrite.
 */
import {createHash} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {lstat, stat} from 'node:fs/promises'
import {posix} from 'node:path'

import {mapBounded} from '../../core/concurrency.js'
import {TargonError, abortError, isAbortError} from '../../core/errors.js'
import {safeJoin} from '../copy/paths.js'
import {type Entry, LocalSide, RemoteSide} from '../copy/sides.js'
import {copyFile, ensureDir, partialOf} from '../copy/tree.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {MAX_MANIFEST_BYTES, type ManifestEntry, type RemoteState, planSync, remoteSeconds, removal, serializeManifest} from './manifest.js'
import {type ManifestRead, listByCommand, readByCommand} from './listing.js'
import {makeDirectory, readManifest, writeManifest} from './manifest-file.js'
import {type LocalFile, type LocalTree, walkLocal} from './walk.js'

export interface SyncReport {
  /** Files whose bytes were sent this time. */
  files_sent: number
  bytes_sent: number
  /** Files removed on the VM because an earlier sync of this local dir sent them and they are gone locally. */
  files_removed: number
  /** Symbolic links not sent (each also warned about). */
  links_skipped: number
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
  /** The local tree (walkLocal of localDir), when its walk was started earlier: run walks while the VM connects. */
  walked?: Promise<LocalTree>
}

/** Files in flight at once: each costs several round trips (open, write, close, chmod, times, rename) besides its bytes. */
const PARALLEL_FILES = 8
/** Directories listed at once on the VM. */
const PARALLEL_LISTINGS = 8
/** Local files hashed at once. */
const PARALLEL_HASHES = 4

export async function syncWorkdir(session: SshSession, options: SyncOptions): Promise<SyncReport> {
  await checkOptions(options)
  const tree = await (options.walked ?? walkLocal(options.localDir)).catch((error: unknown) => {
    throw new TargonError('COPY_FAILED', `the sync of ${options.localDir} failed locally: ${oneLine(error)}`, {
      cause: error,
      hint: 'check the permissions of the directory, or ignore what cannot be read',
    })
  })
  const report: SyncReport = {bytes_sent: 0, files_removed: 0, files_sent: 0, links_skipped: 0}
  for (const skipped of tree.skipped) {
    if (skipped.link) report.links_skipped++
    options.warn(`${skipped.path}: not synced: ${skipped.reason}`)
  }

  // The VM's listing and the manifest (remote commands) come while the SFTP channel opens; null: read over SFTP.
  const listed = listByCommand(session, options.remoteDir, tree.dirs, options.signal)
  const manifestRead = readByCommand(session, options.manifestPath, MAX_MANIFEST_BYTES, options.signal)
  const sftp = await session.sftp()
  // The session outlives the sync (`targon run` goes on to start the job on it): its listener goes with the channel.
  let stopListening = () => {}
  const remote = new RemoteSide(sftp, (listener) => (stopListening = session.onLost(listener)))
  try {
    await syncTree(session, remote, tree, options, report, {listed, manifestRead})
    return report
  } catch (error) {
    if (error instanceof TargonError || isAbortError(error)) throw error
    throw new TargonError('COPY_FAILED', `the sync of ${options.localDir} to the VM failed: ${oneLine(error)}`, {cause: error})
  } finally {
    stopListening()
    sftp.end()
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
) {
  const {localDir, remoteDir, signal} = options
  const lost = () => (session.closed ? 'the SSH connection to the VM was lost' : remote.lostReason)
  const stopped = () => {
    if (signal?.aborted) throw abortError(signal)
    const reason = lost()
    if (reason) throw new TargonError('SSH_FAILED', reason, {hint: 'run the sync again: it sends only what is not there yet'})
  }

  await makeDirectory(remote, remoteDir)
  // The VM's side of the local tree is listed while the manifest is read; the directories only the manifest names
  // (of files gone locally) need a second look, with the first one's.
  const prelisted = await early.listed
  const [manifest, treeView] = await Promise.all([
    readManifest(remote, options, await early.manifestRead),
    viewRemote(remote, remoteDir, tree.dirs, prelisted),
  ])
  const known = new Set(tree.dirs)
  const onlyInManifest = [...(manifest?.keys() ?? [])].map((rel) => posix.dirname(rel)).filter((dir) => dir !== '.' && !known.has(dir))
  const view = onlyInManifest.length === 0 ? treeView : await viewRemote(remote, remoteDir, [...tree.dirs, ...onlyInManifest], prelisted)
  const plan = planSync(tree.files, view.at, manifest)
  stopped()

  const failures: string[] = []
  const placed = new Map<string, ManifestEntry>()
  const place = (file: LocalFile) => placed.set(file.rel, {mtime_ms: file.mtimeMs, size: file.size})
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
  const same = await sameContents(session, plan.compare, options)
  const modeDiffers = (file: LocalFile) => {
    const there = view.at(file.rel)
    return there !== null && there !== 'blocked' && (there.mode & 0o777) !== file.mode
  }
  const touch = [
    ...plan.unchanged.map(({chmod, file}) => ({chmod, file, setTime: false})),
    ...plan.compare.filter((file) => same.has(file.rel)).map((file) => ({chmod: modeDiffers(file), file, setTime: true})),
  ]
  await mapBounded(touch, PARALLEL_FILES, async ({chmod, file, setTime}) => {
    const ok = await attempt(file.rel, async () => {
      if (chmod) await remote.chmod(target(file.rel), file.mode)
      if (setTime) await remote.setMtime(target(file.rel), remoteSeconds(file.mtimeMs))
    })
    if (ok) place(file)
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

    const ok = await attempt(file.rel, () =>
      copyFile(
        local,
        remote,
        {
          mode: file.mode,
          mtime: remoteSeconds(file.mtimeMs),
          size: file.size,
          source: posix.join(localDir, file.rel),
          target: target(file.rel),
        },
        {lost, signal},
        () => undefined,
      ),
    )
    if (!ok) return
    place(file)
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
  if (!lost()) await writeManifest(remote, options.manifestPath, serializeManifest(placed))
  stopped()
  if (failures.length > 0) {
    const more = failures.length > 1 ? ` (and ${failures.length - 1} more)` : ''
    throw new TargonError('COPY_FAILED', `the sync of ${localDir} to the VM failed: ${failures[0]}${more}`, {
      hint: 'files under their final names on the VM are whole; run the sync again to send the rest',
    })
  }
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
    const entry = listing === 'absent' ? undefined : listing?.get(posix.basename(rel))
    return entry ? {kind: entry.kind, mode: entry.mode, mtime: entry.mtime, size: entry.size} : null
  }

  const isDirectory = (dir: string) => listings.get(dir) instanceof Map
  const partials = (files: LocalFile[]) => {
    const stems = new Set(files.map((file) => posix.join(parentOf(file.rel), posix.basename(file.rel).slice(0, 180))))
    return [...listings].flatMap(([dir, listing]) =>
      listing instanceof Map
        ? [...listing.values()]
            .filter((entry) => entry.kind === 'file' && stems.has(posix.join(dir, partialOf(entry.name) ?? '/')))
            .map((entry) => posix.join(dir, entry.name))
        : [],
    )
  }

  return {at, isDirectory, partials}
}

function parentOf(rel: string): string {
  const slash = rel.lastIndexOf('/')
  return slash < 0 ? '' : rel.slice(0, slash)
}

/**
 * The files whose contents are the same here and on the VM: SHA-256 of each locally, and on the VM with sha256sum,
 * all of them in one remote command. The names go over stdin, NUL-separated, never through the remote shell; the
 * answer is bounded and only the names asked for count. A file the VM could not hash is sent.
 */
async function sameContents(session: SshSession, files: LocalFile[], options: SyncOptions): Promise<Set<string>> {
  if (files.length === 0) return new Set()
  const localHashes = await mapBounded(files, PARALLEL_HASHES, (file) =>
    hashLocal(posix.join(options.localDir, file.rel)).catch(() => null),
  )
  const names = files.map((file) => `./${file.rel}`)
  const result = await session.exec(`cd -- ${shellQuote(options.remoteDir)} && LC_ALL=C xargs -0 -r sha256sum -z --`, {
    maxBytes: names.reduce((sum, name) => sum + Buffer.byteLength(name) + 80, 4096),
    signal: options.signal,
    stdin: names.join('\0'),
  })
  const remoteHashes = new Map<string, string>()
  for (const record of result.stdout.split('\0')) {
    const match = /^([0-9a-f]{64}) [ *]\.\/(.+)$/s.exec(record)
    if (match) remoteHashes.set(match[2] as string, match[1] as string)
  }

  return new Set(
    files.filter((file, index) => localHashes[index] && remoteHashes.get(file.rel) === localHashes[index]).map((file) => file.rel),
  )
}

function hashLocal(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(path)
      .on('error', reject)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
  })
}
