/**
 * The local side of a sync: the regular files of a working directory that are to go, after git's ignore rules over
 * every `.gitignore` in the tree and every `.targonignore` (same syntax; in one directory its rules come after the
 * `.gitignore`'s, so they win). No global excludes: neither core.excludesFile nor .git/info/exclude. `.git` (at any
 * depth) and the root's `targon-out` never go. An ignored directory is not entered, so nothing below it can be
 * re-included, as in git. Held back whatever the rules say (held-back.ts): targon's config directory and `~/.ssh`,
 * and, unless a `.targonignore` lets it through, what looks like a private key or a credentials store. Symbolic links
 * and special files are not sent, nor names with control characters (the manifest refuses them). The caller warns
 * about everything held back but what the rules ignore.
 */
import {closeSync, lstatSync, openSync, readSync, readdirSync} from 'node:fs'
import {posix} from 'node:path'

import {type HeldBack, type NeverSentDir, looksSecret, neverSentKind, neverSentText, refuseInsideNeverSent} from './held-back.js'
import {type IgnoreRule, isIgnored, lastMatch, parseIgnoreFile} from './ignore.js'

export const IGNORE_FILES = ['.gitignore', '.targonignore'] as const

/** An ignore file larger than this is refused: no real one comes near it. */
const MAX_IGNORE_FILE_BYTES = 4 * 1024 * 1024

export interface LocalFile {
  /** Relative to the synced directory, "/"-separated. */
  rel: string
  size: number
  /** As the local filesystem has it (sub-millisecond digits included). */
  mtimeMs: number
  /** Permission bits. */
  mode: number
}

export interface LocalTree {
  /** Sorted by path. */
  files: LocalFile[]
  /** The directories that are not ignored, parents first ('' is the root). */
  dirs: string[]
  /** Not sent, by name (not the ignore rules): targon's secrets, what looks secret, links, special files, unusable names. */
  heldBack: HeldBack[]
  /** False when the walk stopped at its maxEntries. */
  complete: boolean
}

export interface WalkOptions {
  /** The directories never sent (neverSentDirs): none of them is entered. */
  neverSent: readonly NeverSentDir[]
  /**
   * Stop once this many files and directories are found (the tree is then not complete): for a count, not for a
   * sync. Directories count too: a tree of many empty directories (a busy /tmp) costs time without adding files.
   */
  maxEntries?: number
}

/** Never sent, whatever the ignore files say: by name at any depth, and by path at the root. */
const NEVER_ANY_DEPTH = new Set(['.git'])
const NEVER_AT_ROOT = new Set(['targon-out'])

// eslint-disable-next-line no-control-regex -- control characters are exactly what is looked for
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * The walk reads the filesystem synchronously, one directory at a time, and yields to the event loop between
 * directories (run walks while the VM's connection opens): 2,000 files took 100-150 ms with one awaited lstat after
 * the other, about 50 ms with the lstats of a directory in flight together, and 10 ms like this.
 */
export async function walkLocal(root: string, options: WalkOptions): Promise<LocalTree> {
  refuseInsideNeverSent(root, options.neverSent)
  const tree: LocalTree = {complete: true, dirs: [], files: [], heldBack: []}
  const held = (path: string, kind: HeldBack['kind'], reason: string) => tree.heldBack.push({kind, path, reason})
  type Pending = {rel: string; rules: IgnoreRule[]; targonRules: IgnoreRule[]}
  const pending: Pending[] = [{rel: '', rules: [], targonRules: []}]
  for (let next = 0; next < pending.length && tree.complete; next++) {
    await new Promise<void>((resolve) => setImmediate(resolve))
    const {rel: dirRel, rules: inherited, targonRules: targonInherited} = pending[next] as Pending
    const dir = dirRel === '' ? root : posix.join(root, dirRel)
    const rules = [...inherited]
    const targonRules = [...targonInherited]
    for (const name of IGNORE_FILES) {
      const parsed = parseIgnoreFile(readIgnoreFile(posix.join(dir, name)), dirRel)
      rules.push(...parsed)
      if (name === '.targonignore') targonRules.push(...parsed)
    }
    const names = readNames(dir, dirRel === '')
    if (names === null) continue
    tree.dirs.push(dirRel)
    for (const name of names) {
      const rel = dirRel === '' ? name : `${dirRel}/${name}`
      if (NEVER_ANY_DEPTH.has(name) || (dirRel === '' && NEVER_AT_ROOT.has(name))) continue
      // An entry gone since the listing (an editor's temporary file) is not there to send.
      const info = lstatSync(`${dir}/${name}`, {throwIfNoEntry: false})
      if (info === undefined) continue
      const never = neverSentKind(options.neverSent, info)
      if (never !== null) {
        held(rel, never, neverSentText(never))
        continue
      }
      if (isIgnored(rules, rel, info.isDirectory())) continue
      const secret = looksSecret(rel)
      // Only a .targonignore can send what looks secret: its last rule that matches is a negation.
      if (secret !== null && lastMatch(targonRules, rel, info.isDirectory())?.negated !== true) held(rel, 'looks-secret', secret)
      else if (CONTROL.test(name)) held(JSON.stringify(rel), 'bad-name', 'its name has a control character')
      else if (info.isDirectory()) pending.push({rel, rules, targonRules})
      else if (info.isFile()) {
        tree.files.push({mode: info.mode & 0o777, mtimeMs: info.mtimeMs, rel, size: info.size})
      } else if (info.isSymbolicLink()) held(rel, 'link', 'a symbolic link (not followed)')
      else held(rel, 'not-regular', 'not a regular file or directory')
    }
    if (options.maxEntries !== undefined && tree.files.length + tree.dirs.length >= options.maxEntries) tree.complete = false
  }

  tree.files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))
  return tree
}

/** A directory's names, sorted; null when a directory below the root is gone since its parent was listed. */
function readNames(dir: string, isRoot: boolean): string[] | null {
  try {
    return readdirSync(dir).sort()
  } catch (error) {
    if (!isRoot && (error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/** An ignore file's text; '' when there is none (or it is not a regular file). */
function readIgnoreFile(path: string): string {
  const info = lstatSync(path, {throwIfNoEntry: false})
  if (!info?.isFile()) return ''
  if (info.size > MAX_IGNORE_FILE_BYTES) throw new Error(`${path}: an ignore file over ${MAX_IGNORE_FILE_BYTES / 1024 / 1024} MiB; refused`)
  const handle = openSync(path, 'r')
  try {
    const buffer = Buffer.alloc(info.size)
    const bytesRead = readSync(handle, buffer, 0, info.size, 0)
    return buffer.subarray(0, bytesRead).toString('utf8')
  } finally {
    closeSync(handle)
  }
}
