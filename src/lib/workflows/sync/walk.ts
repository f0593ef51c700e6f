/**
 * The local side of a sync: the regular files of a working directory that are to go, after git's ignore rules over
 * every `.gitignore` in the tree and every `.targonignore` (same syntax; in one directory its rules come after the
 * `.gitignore`'s, so they win). No global excludes: neither core.excludesFile nor .git/info/exclude. `.git` (at any
 * depth) and the root's `targon-out` never go. An ignored directory is not entered, so nothing below it can be
 * re-included, as in git. Symbolic links and special files are not sent (the caller warns about each), nor names
 * with control characters (the manifest refuses them).
 */
import {closeSync, lstatSync, openSync, readSync, readdirSync} from 'node:fs'
import {posix} from 'node:path'

import {type IgnoreRule, isIgnored, parseIgnoreFile} from './ignore.js'

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
  /** Not sent: symbolic links, special files, unusable names; each with why, its path as a warning shows it. */
  skipped: {path: string; link: boolean; reason: string}[]
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
export async function walkLocal(root: string): Promise<LocalTree> {
  const tree: LocalTree = {dirs: [], files: [], skipped: []}
  const pending: {rel: string; rules: IgnoreRule[]}[] = [{rel: '', rules: []}]
  for (let next = 0; next < pending.length; next++) {
    await new Promise<void>((resolve) => setImmediate(resolve))
    const {rel: dirRel, rules: inherited} = pending[next] as {rel: string; rules: IgnoreRule[]}
    const dir = dirRel === '' ? root : posix.join(root, dirRel)
    const rules = [...inherited]
    for (const name of IGNORE_FILES) rules.push(...parseIgnoreFile(readIgnoreFile(posix.join(dir, name)), dirRel))
    tree.dirs.push(dirRel)
    const names = readdirSync(dir).sort()
    for (const name of names) {
      const rel = dirRel === '' ? name : `${dirRel}/${name}`
      if (NEVER_ANY_DEPTH.has(name) || (dirRel === '' && NEVER_AT_ROOT.has(name))) continue
      const info = lstatSync(`${dir}/${name}`)
      if (isIgnored(rules, rel, info.isDirectory())) continue
      if (CONTROL.test(name)) tree.skipped.push({link: false, path: JSON.stringify(rel), reason: 'its name has a control character'})
      else if (info.isDirectory()) pending.push({rel, rules})
      else if (info.isFile()) tree.files.push({mode: info.mode & 0o777, mtimeMs: info.mtimeMs, rel, size: info.size})
      else if (info.isSymbolicLink()) tree.skipped.push({link: true, path: rel, reason: 'a symbolic link (not followed)'})
      else tree.skipped.push({link: false, path: rel, reason: 'not a regular file or directory'})
    }
  }

  tree.files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))
  return tree
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
