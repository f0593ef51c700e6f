/**
 * Copies one file or directory tree from one side to the other. The source is listed first (so that progress
 * knows the totals), then copied file by file. Each file is written under a temporary name next to its final one
 * and renamed at the end, so a file under its final name is always whole. Symbolic links and special files in
 * the tree are skipped, never followed; a listed name that is not a plain path component is refused; nothing is
 * written outside the destination root.
 */
import {randomBytes} from 'node:crypto'
import {posix} from 'node:path'

import {abortError, isAbortError} from '../../core/errors.js'
import type {CopyBudget} from './budget.js'
import {safeJoin, unsafeName} from './paths.js'
import {type Entry, type OpenFile, type Side, describeFsError} from './sides.js'

export interface TreeProgress {
  files: number
  totalFiles: number
  bytes: number
  totalBytes: number
}

export interface TreeOutcome {
  /** Paths as `<name>/<relative>`, where name is the copied root's. */
  copied: string[]
  failed: {path: string; error: string}[]
  skipped: {path: string; reason: string}[]
  plannedFiles: number
  bytes: number
  /** Why the copy stopped before the end (an interrupt, a dropped connection); null when it went through. */
  stopped: string | null
}

export interface TreeOptions {
  signal?: AbortSignal
  /** Why nothing more can succeed (the connection or the SFTP session is gone); null while it works. */
  lost: () => string | null
  onProgress?: (progress: TreeProgress) => void
  /** What the copy may write at most (shared by the trees of one fetch); the file that would pass it, or not fit on the disk, stops the copy. */
  budget?: CopyBudget
}

interface Plan {
  dirs: {rel: string; mode: number}[]
  files: {rel: string; mode: number; size: number}[]
  skipped: {path: string; reason: string}[]
  failed: {path: string; error: string}[]
}

/** Copies `source` (already stat'ed as `entry`) to `target`; the copy is shown under `name`. */
export async function copyTree(from: Side, to: Side, source: string, entry: Entry, target: string, name: string, options: TreeOptions) {
  const shown = (rel: string) => (rel === '' ? name : `${name}/${rel}`)
  const plan =
    entry.kind === 'dir'
      ? await planTree(from, source, entry, shown)
      : {dirs: [], failed: [], files: [{mode: entry.mode, rel: '', size: entry.size}], skipped: []}
  const outcome: TreeOutcome = {
    bytes: 0,
    copied: [],
    failed: [...plan.failed],
    plannedFiles: plan.files.length,
    skipped: plan.skipped,
    stopped: null,
  }
  const progress: TreeProgress = {
    bytes: 0,
    files: 0,
    totalBytes: plan.files.reduce((sum, file) => sum + file.size, 0),
    totalFiles: plan.files.length,
  }
  options.onProgress?.(progress)

  const created: {path: string; mode: number}[] = []
  let bounded: string | null = null
  const brokenDirs: string[] = []
  for (const dir of plan.dirs) {
    if (brokenDirs.some((broken) => within(dir.rel, broken))) continue
    const path = safeJoin(target, dir.rel)
    try {
      if (await ensureDir(to, path)) created.push({mode: dir.mode, path})
    } catch (error) {
      brokenDirs.push(dir.rel)
      outcome.failed.push({error: error instanceof Error ? error.message : String(error), path: shown(dir.rel)})
      if (dir.rel === '') break
    }
  }

  for (const file of plan.files) {
    const broken = brokenDirs.find((dir) => within(file.rel, dir))
    if (broken !== undefined) {
      outcome.failed.push({error: `its directory ${shown(broken)} could not be created`, path: shown(file.rel)})
      continue
    }

    if (stopReason(options)) break
    // The file's directory was made above (or is the root's): its disk is the one the file goes to.
    bounded = (await options.budget?.take(file.size, posix.dirname(posix.join(target, file.rel)))) ?? null
    if (bounded) break
    let sent = 0
    try {
      const paths = {source: safeJoin(source, file.rel), target: safeJoin(target, file.rel)}
      await copyFile(from, to, {...paths, mode: file.mode, size: file.size}, options, (bytes) => {
        sent += bytes
        progress.bytes += bytes
        options.onProgress?.(progress)
      })
      outcome.copied.push(shown(file.rel))
      outcome.bytes += sent
      progress.files++
      options.onProgress?.(progress)
    } catch (error) {
      progress.bytes -= sent
      options.budget?.giveBack(file.size)
      outcome.failed.push({error: stopReason(options) ?? oneLine(error), path: shown(file.rel)})
    }
  }

  outcome.stopped = stopReason(options) ?? bounded
  // Directories get their modes last: a read-only one could not have been filled.
  for (const dir of created.reverse()) await to.chmod(dir.path, dir.mode & 0o777).catch(() => undefined)
  return outcome
}

function stopReason(options: TreeOptions): string | null {
  if (options.signal?.aborted) return 'interrupted'
  return options.lost()
}

function within(rel: string, dir: string): boolean {
  return dir === '' || rel === dir || rel.startsWith(`${dir}/`)
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
}

/** Lists the tree under `root`: its directories (parents first) and files, what is skipped and what is refused. */
async function planTree(from: Side, root: string, entry: Entry, shown: (rel: string) => string): Promise<Plan> {
  const plan: Plan = {dirs: [{mode: entry.mode, rel: ''}], failed: [], files: [], skipped: []}
  const pending = ['']
  while (pending.length > 0) {
    const rel = pending.shift() as string
    let entries: Entry[]
    try {
      entries = await from.list(safeJoin(root, rel))
    } catch (error) {
      plan.failed.push({error: describeFsError(error, shown(rel), from.where), path: shown(rel)})
      continue
    }

    for (const child of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const refused = unsafeName(child.name)
      if (refused) {
        plan.failed.push({error: `refused ${refused} in the listing ${from.where}`, path: shown(rel)})
        continue
      }

      const childRel = rel === '' ? child.name : `${rel}/${child.name}`
      if (child.kind === 'dir') {
        plan.dirs.push({mode: child.mode, rel: childRel})
        pending.push(childRel)
      } else if (child.kind === 'file') plan.files.push({mode: child.mode, rel: childRel, size: child.size})
      else
        plan.skipped.push({
          path: shown(childRel),
          reason: child.kind === 'link' ? 'a symbolic link (not followed)' : 'not a regular file or directory',
        })
    }
  }

  return plan
}

/**
 * Makes a directory (with `mode`, 0700 until copyTree gives it the source's); one already there is used only if it is
 * a real directory, never a link. True when made here.
 */
export async function ensureDir(to: Side, path: string, mode = 0o700): Promise<boolean> {
  try {
    await to.mkdir(path, mode)
    return true
  } catch (error) {
    const existing = await to.lstat(path).catch(() => null)
    if (existing?.kind === 'dir') return false
    if (existing?.kind === 'link') throw new Error(`${path}: is a symbolic link ${to.where}; not followed`, {cause: error})
    if (existing) throw new Error(`${path}: exists ${to.where} and is not a directory`, {cause: error})
    throw new Error(describeFsError(error, path, to.where), {cause: error})
  }
}

/** The temporary name a file is written under, beside `target`, until it is whole. */
export function partialPath(target: string): string {
  return posix.join(posix.dirname(target), `.${posix.basename(target).slice(0, 180)}.targon-part-${randomBytes(4).toString('hex')}`)
}

/** For a name made by partialPath: the start of the final file's name it stands for (its first 180 characters); else null. */
export function partialOf(name: string): string | null {
  return /^\.(.+)\.targon-part-[0-9a-f]{8}$/s.exec(name)?.[1] ?? null
}

/** An error whose message already names the path and the side. */
class Described extends Error {}

/** Bytes per request, and requests in flight per file: one at a time would make every chunk wait a round trip. */
const CHUNK = 64 * 1024
const IN_FLIGHT = 16

/** One file, through a temporary name in the destination directory, renamed into place once whole (with `mtime`, when given). */
export async function copyFile(
  from: Pick<Side, 'openRead' | 'where'>,
  to: Side,
  file: {source: string; target: string; mode: number; size: number; mtime?: number},
  options: TreeOptions,
  onBytes: (bytes: number) => void,
): Promise<void> {
  const {source, target} = file
  const temp = partialPath(target)
  const input = await from.openRead(source).catch((error: unknown) => {
    throw new Described(describeFsError(error, source, from.where), {cause: error})
  })
  let output: OpenFile | undefined
  try {
    output = await to.openWrite(temp, 0o600)
    await transfer(input, output, file.size, {...options, source, target, where: [from.where, to.where]}, onBytes)
    await output.close()
    output = undefined
    await to.setModeAndTime(temp, file.mode & 0o777, file.mtime)
    await to.rename(temp, target)
  } catch (error) {
    await output?.close().catch(() => undefined)
    await to.remove(temp).catch(() => undefined)
    throw error instanceof Described || isAbortError(error)
      ? error
      : new Described(describeFsError(error, target, to.where), {cause: error})
  } finally {
    await input.close().catch(() => undefined)
  }
}

/** Copies `size` bytes with IN_FLIGHT chunks under way at once; the first failure (or the interrupt) ends it. */
async function transfer(
  input: OpenFile,
  output: OpenFile,
  size: number,
  options: TreeOptions & {source: string; target: string; where: [string, string]},
  onBytes: (bytes: number) => void,
): Promise<void> {
  let next = 0
  let failure: unknown
  const worker = async () => {
    const buffer = Buffer.allocUnsafe(CHUNK)
    while (next < size && failure === undefined) {
      if (options.signal?.aborted) throw abortError(options.signal)
      const position = next
      next += CHUNK
      const length = Math.min(CHUNK, size - position)
      for (let done = 0; done < length;) {
        const bytes = await input.read(buffer.subarray(done), length - done, position + done).catch((error: unknown) => {
          throw new Described(describeFsError(error, options.source, options.where[0]), {cause: error})
        })
        if (bytes === 0) throw new Described(`${options.source}: changed while being copied ${options.where[0]}`)
        done += bytes
      }

      await output.write(buffer, length, position)
      onBytes(length)
    }
  }

  const outcomes = await Promise.allSettled(
    Array.from({length: Math.max(1, Math.min(IN_FLIGHT, Math.ceil(size / CHUNK)))}, () =>
      worker().catch((error: unknown) => {
        failure ??= error
        throw error
      }),
    ),
  )
  if (outcomes.some((outcome) => outcome.status === 'rejected')) throw failure
  // A file that grew since it was listed would arrive cut short under its final name: one more byte means it did.
  const probe = Buffer.allocUnsafe(1)
  const more = await input.read(probe, 1, size).catch((error: unknown) => {
    throw new Described(describeFsError(error, options.source, options.where[0]), {cause: error})
  })
  if (more > 0) throw new Described(`${options.source}: changed while being copied ${options.where[0]}`)
}
