/**
 * The VM's listings of the tree's directories in one remote command (GNU find over the open SSH connection) instead
 * of one SFTP listing per directory, each several round trips: measured, that took a second sync's view of a
 * 21-directory tree from 100-150 ms to one exec, which also runs while the SFTP channel opens.
 *
 * The directory names go over stdin, NUL-separated, never through the remote shell; each is given to find as
 * `./<dir>` under the sync root, never followed below its start (-P), one level deep. The answer is untrusted: bounded
 * in bytes, every record checked (its directory one of those asked for, a plain name, a known type, numbers that are
 * numbers); any doubt (a refused record, too much output, a failed command, a missing directory, a VM without GNU
 * find) and the caller lists over SFTP as before. Whether a directory's listing counts (its parents real directories,
 * not links) is still decided from its parent's listing by the caller, exactly as with SFTP's. The manifest comes
 * the same way, in a second command beside the first (readByCommand).
 */
import type {Kind} from '../copy/paths.js'
import type {Entry} from '../copy/sides.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'

/** The largest answer read: about 30,000 entries of 255-character names; a larger tree is listed over SFTP. */
const MAX_LISTING_BYTES = 8 * 1024 * 1024
const FIELDS = 6
const KINDS: Record<string, Kind> = {d: 'dir', f: 'file', l: 'link'}

/** The entries of each directory (relative to root, '' for root itself), or null when the caller should use SFTP. */
export async function listByCommand(
  session: SshSession,
  root: string,
  dirs: readonly string[],
  signal?: AbortSignal,
): Promise<Map<string, Entry[]> | null> {
  const starts = dirs.map(startOf)
  const result = await session
    .exec(
      `cd -- ${shellQuote(root)} && LC_ALL=C xargs -0 -r sh -c 'exec find -P "$@" -mindepth 1 -maxdepth 1 -printf "%H\\0%f\\0%y\\0%m\\0%s\\0%T@\\0"' find`,
      {maxBytes: MAX_LISTING_BYTES, signal, stdin: starts.join('\0')},
    )
    .catch(() => null)
  if (!result || result.code !== 0 || result.overflowed || result.aborted) return null
  return parseListing(result.stdout, dirs)
}

function startOf(dir: string): string {
  return dir === '' ? '.' : `./${dir}`
}

/** find's records (directory, name, type, mode, size, mtime, each NUL-ended) by directory; null when any is refused. */
export function parseListing(text: string, dirs: readonly string[]): Map<string, Entry[]> | null {
  const byStart = new Map(dirs.map((dir) => [startOf(dir), dir]))
  const listings = new Map<string, Entry[]>(dirs.map((dir) => [dir, []]))
  const fields = text.split('\0')
  if (fields.pop() !== '' || fields.length % FIELDS !== 0) return null
  for (let index = 0; index < fields.length; index += FIELDS) {
    const [start, name, type, mode, size, mtime] = fields.slice(index, index + FIELDS)
    const dir = byStart.get(start as string)
    const listing = dir === undefined ? undefined : listings.get(dir)
    if (!listing || !plainName(name as string)) return null
    if (!/^[0-7]{1,4}$/.test(mode as string) || !/^\d{1,16}$/.test(size as string) || !/^-?\d{1,15}(\.\d+)?$/.test(mtime as string))
      return null
    if (!/^[a-zA-Z]$/.test(type as string)) return null
    const bytes = Number(size)
    if (!Number.isSafeInteger(bytes)) return null
    listing.push({
      kind: KINDS[type as string] ?? 'other',
      mode: Number.parseInt(mode as string, 8),
      mtime: Math.floor(Number(mtime)),
      name: name as string,
      size: bytes,
    })
  }

  return listings
}

function plainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && name.length <= 1024
}

/** What the manifest's command found: its text, none there, something other than a regular file, or null (use SFTP). */
export type ManifestRead = {text: string} | 'absent' | 'not a file' | 'too large' | null

/**
 * The manifest read in one remote command, beside the listing, instead of SFTP's lstat, open, reads and close after
 * the channel has opened. As over SFTP: a link or anything but a regular file is not read, and the read is bounded.
 */
export async function readByCommand(session: SshSession, path: string, maxBytes: number, signal?: AbortSignal): Promise<ManifestRead> {
  const result = await session
    .exec(
      `m=${shellQuote(path)}; if [ -L "$m" ]; then exit 3; elif [ ! -e "$m" ]; then exit 4; elif [ ! -f "$m" ]; then exit 3; fi; exec cat -- "$m"`,
      {maxBytes, signal},
    )
    .catch(() => null)
  if (!result || result.aborted) return null
  if (result.overflowed) return 'too large'
  return result.code === 0 ? {text: result.stdout} : result.code === 3 ? 'not a file' : result.code === 4 ? 'absent' : null
}
