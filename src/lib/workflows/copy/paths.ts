/**
 * Where a copy may write. Names from a directory listing (the VM's, on download) are only trusted as single
 * path components; every destination path is checked to stay under the copy's own root; and the root itself is
 * placed as scp places it.
 */
import {posix} from 'node:path'

/** Why a listed name cannot be used as one path component, or null when it can. */
export function unsafeName(name: string): string | null {
  if (name === '') return 'an empty name'
  if (name === '.' || name === '..') return `the name "${name}"`
  if (name.includes('/')) return 'a name with "/"'
  if (name.includes('\0')) return 'a name with a NUL byte'
  return null
}

/** root + relative, refusing anything that would land outside root (absolute parts, "..", empty components). */
export function safeJoin(root: string, relative: string): string {
  if (relative === '') return root
  if (relative.startsWith('/') || relative.split('/').some((part) => unsafeName(part) !== null))
    throw new Error(`refusing the path "${relative}": it could leave ${root}`)
  const joined = posix.join(root, relative)
  const base = posix.normalize(root).replace(/\/+$/, '')
  // Under "." (the working or the home directory) the joined path has no prefix: it must not climb out or turn absolute.
  const inside = base === '.' ? joined !== '..' && !joined.startsWith('../') && !joined.startsWith('/') : joined.startsWith(`${base}/`)
  if (!inside) throw new Error(`refusing the path "${relative}": it leaves ${root}`)
  return joined
}

export type Kind = 'dir' | 'file' | 'link' | 'other'

/**
 * Where the copied root goes, as scp decides: into an existing directory under the source's name, else as the
 * destination itself (a new name). Throws a one-line reason when that cannot work.
 */
export function placeRoot(
  source: {kind: 'dir' | 'file'; name: string},
  destination: {path: string; kind: Kind | null; intoDirectory: boolean},
): string {
  if (destination.kind === 'dir') return posix.join(destination.path, source.name)
  if (destination.intoDirectory) throw new Error(`${destination.path}: no such directory`)
  if (destination.kind === null || (destination.kind === 'file' && source.kind === 'file')) return destination.path
  throw new Error(`${destination.path}: exists and is not a directory`)
}

/** The name a path gives its copy: its last component ("data" for "/srv/data/"). */
export function nameOf(path: string): string {
  return posix.basename(posix.normalize(path))
}
