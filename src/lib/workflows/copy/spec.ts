/**
 * The two arguments of `targon cp`, as scp reads them: `VM:PATH` is on a VM, anything else is local. A colon
 * counts only before the first slash, so `./a:b` and `/tmp/a:b` stay local. `:PATH`, with no VM, means every
 * VM of the selection (--fleet, or --vms).
 */
import {usageError} from '../../core/errors.js'

export type Direction = 'download' | 'upload'

export type PathSpec = {kind: 'local'; path: string} | {kind: 'remote'; vm: string | null; path: string}

export interface CopySpec {
  direction: Direction
  local: string
  /** The VM as named before the colon; null: every VM of the selection. */
  vm: string | null
  /** On the VM; empty means the home directory, as with scp. */
  remote: string
  /** The destination was given with a trailing slash: it must be an existing directory. */
  intoDirectory: boolean
}

const USAGE = 'targon cp SOURCE DEST, one of them VM:PATH (or :PATH with --fleet/--vms), e.g. targon cp ./data worker1:/home/ubuntu/'

export function parsePathSpec(arg: string): PathSpec {
  const colon = arg.indexOf(':')
  const slash = arg.indexOf('/')
  if (colon < 0 || (slash >= 0 && slash < colon)) return {kind: 'local', path: arg}
  return {kind: 'remote', path: homeRelative(arg.slice(colon + 1)), vm: arg.slice(0, colon) || null}
}

/**
 * A remote path of "~" or "~/…" (quoted, the local shell leaves it alone; SFTP does not expand it) is the home
 * directory, where a relative path already is; another user's "~name" is refused.
 */
function homeRelative(path: string): string {
  if (path === '~') return ''
  if (path.startsWith('~/')) return path.slice(2)
  if (path.startsWith('~'))
    throw usageError(
      `"${path}": only the VM's own home (~/) is understood`,
      "drop the ~name: a relative path is under ubuntu's home directory",
    )
  return path
}

export function parseCopySpec(source: string, destination: string): CopySpec {
  if (source === '' || destination === '') throw usageError('empty path', USAGE)
  const from = parsePathSpec(source)
  const to = parsePathSpec(destination)
  if (from.kind === 'local' && to.kind === 'local') throw usageError(`neither ${source} nor ${destination} is on a VM (VM:PATH)`, USAGE)
  if (from.kind === 'remote' && to.kind === 'remote')
    throw usageError('both paths are on VMs; copy between VMs through this machine', USAGE)
  for (const spec of [from, to]) {
    if (spec.path.includes('\0')) throw usageError('a path contains a NUL byte', USAGE)
    if (spec.kind === 'local' && spec.path === '') throw usageError('empty local path', USAGE)
  }

  const remote = from.kind === 'remote' ? from : (to as Extract<PathSpec, {kind: 'remote'}>)
  const local = from.kind === 'local' ? from.path : (to as Extract<PathSpec, {kind: 'local'}>).path
  return {
    direction: from.kind === 'local' ? 'upload' : 'download',
    intoDirectory: destination.endsWith('/'),
    local,
    remote: remote.path,
    vm: remote.vm,
  }
}
