/**
 * The sync manifest's file on the VM (manifest.ts says what it holds): read back bounded, over what the listing command
 * found or else over SFTP, and written whole under a temporary name. Both move it in chunks with several requests in
 * flight, as one request at a time would wait a round trip each.
 */
import {posix} from 'node:path'

import {mapBounded} from '../../core/concurrency.js'
import type {RemoteSide} from '../copy/sides.js'
import {ensureDir, partialPath} from '../copy/tree.js'
import {MAX_MANIFEST_BYTES, type ManifestEntry, parseManifest} from './manifest.js'
import type {ManifestRead} from './listing.js'

/** Bytes per SFTP request of the manifest, and requests in flight: one at a time, each would wait a round trip. */
const MANIFEST_CHUNK = 64 * 1024
const MANIFEST_IN_FLIGHT = 16

/** An absolute directory on the VM, made with its parents where missing; the directory itself must not be a link. */
export async function makeDirectory(remote: RemoteSide, path: string): Promise<void> {
  // Mostly it is there from an earlier sync: one round trip instead of one per parent.
  if ((await remote.lstat(path).catch(() => null))?.kind === 'dir') return
  const parts = path.split('/').filter(Boolean)
  for (let index = 1; index < parts.length; index++) {
    const parent = `/${parts.slice(0, index).join('/')}`
    if (!(await remote.stat(parent))) await ensureDir(remote, parent, 0o755)
  }

  await ensureDir(remote, path, 0o755)
}

/**
 * The manifest of earlier syncs: empty when there is none; null when it is refused (send everything, remove nothing).
 * `read` is what the remote command found (listing.ts); over SFTP when it found nothing certain.
 */
export async function readManifest(
  remote: RemoteSide,
  options: {manifestPath: string; warn: (message: string) => void},
  read: ManifestRead,
): Promise<Map<string, ManifestEntry> | null> {
  const path = options.manifestPath
  const refuse = (why: string) => {
    options.warn(`the sync manifest on the VM (${path}) is refused: ${why}; sending every file and removing none`)
    return null
  }
  const tooLarge = `larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`
  const parse = (text: string) => {
    const parsed = parseManifest(text)
    return 'refused' in parsed ? refuse(parsed.refused) : parsed.files
  }

  if (read === 'absent') return new Map()
  if (read === 'not a file') return refuse('not a regular file')
  if (read === 'too large') return refuse(tooLarge)
  if (read !== null) return parse(read.text)

  const entry = await remote.lstat(path)
  if (!entry) return new Map()
  if (entry.kind !== 'file') return refuse('not a regular file')
  if (entry.size > MAX_MANIFEST_BYTES) return refuse(tooLarge)
  const file = await remote.openRead(path)
  const chunks: Buffer[] = []
  let total = 0
  try {
    // The size it was listed with, read in chunks at once (one at a time, each waits a round trip); then on to the end.
    const offsets = Array.from({length: Math.ceil(entry.size / MANIFEST_CHUNK)}, (_, index) => index * MANIFEST_CHUNK)
    const listed = await mapBounded(offsets, MANIFEST_IN_FLIGHT, async (offset) => {
      const chunk = Buffer.allocUnsafe(MANIFEST_CHUNK)
      return chunk.subarray(0, await file.read(chunk, chunk.length, offset))
    })
    for (const chunk of listed) {
      chunks.push(chunk)
      total += chunk.length
      if (chunk.length < MANIFEST_CHUNK) break
    }
    for (;;) {
      const chunk = Buffer.allocUnsafe(MANIFEST_CHUNK)
      const bytes = await file.read(chunk, chunk.length, total)
      if (bytes === 0) break
      chunks.push(chunk.subarray(0, bytes))
      total += bytes
      if (total > MAX_MANIFEST_BYTES) return refuse(tooLarge)
    }
  } finally {
    await file.close().catch(() => undefined)
  }

  return parse(Buffer.concat(chunks).toString('utf8'))
}

/**
 * Written whole under a temporary name, then renamed over the old one (a link there is replaced, not followed); the
 * temporary file goes again when that fails.
 */
export async function writeManifest(remote: RemoteSide, path: string, text: string): Promise<void> {
  await makeDirectory(remote, posix.dirname(path))
  const temp = partialPath(path)
  const bytes = Buffer.from(text)
  const file = await remote.openWrite(temp, 0o600)
  try {
    try {
      const offsets = Array.from({length: Math.ceil(bytes.length / MANIFEST_CHUNK)}, (_, index) => index * MANIFEST_CHUNK)
      await mapBounded(offsets, MANIFEST_IN_FLIGHT, (done) =>
        file.write(bytes.subarray(done, done + MANIFEST_CHUNK), Math.min(MANIFEST_CHUNK, bytes.length - done), done),
      )
    } finally {
      await file.close()
    }

    await remote.rename(temp, path)
  } catch (error) {
    await remote.remove(temp).catch(() => undefined)
    throw error
  }
}
