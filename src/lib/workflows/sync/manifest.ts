/**
 * The sync's memory, kept on the VM: which files an earlier sync of this local directory placed there, with the
 * local size and modification time they had. It decides what need not be sent again and which files on the VM a sync
 * may remove. The VM can rewrite it, so it is read back as untrusted input: bounded in size, checked field by field,
 * every path a plain relative one. A manifest that fails any check is refused as a whole: that sync sends everything
 * and removes nothing.
 *
 * What a sync does with each local file (planSync), cheapest first:
 * - the VM's file (its lstat, from the directory listings) is missing, not a regular file, or of another size: send;
 * - the manifest records the same size and local mtime, and the VM's file has that size and that mtime (in whole
 *   seconds, SFTP's resolution; the sync sets it): unchanged, nothing read or sent;
 * - otherwise (same size, some time differs): compare contents by SHA-256 and send only when they differ. The VM's
 *   side is the hash the manifest recorded of what was placed while the VM's file still has the size and time it was
 *   placed with, else the VM's own sha256sum. The manifest's sub-second mtime catches a change within the second the
 *   VM cannot tell apart.
 */
import type {LocalFile} from './walk.js'

/** The largest manifest read back: about 270 bytes per file with its hash, so room for some 240,000 files. */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024
const MAX_PATH_CHARS = 4096
const MAX_NAME_CHARS = 255

export interface ManifestEntry {
  size: number
  /** The local modification time when the file was placed (sub-millisecond digits included). */
  mtime_ms: number
  /** The SHA-256 of what was placed, in hex; absent in manifests of earlier versions. */
  sha256?: string
}

const SHA256 = /^[0-9a-f]{64}$/

/**
 * The manifest is checked by hand rather than by a zod schema: zod's parse of 2,000 entries took 8 ms of a second
 * sync's 15 ms of parsing, on the path to the job's start (figure 16).
 */
function filesOf(json: unknown): Record<string, unknown> | string {
  if (!isRecord(json)) return 'not an object'
  if (Object.keys(json).sort().join() !== 'files,format,version') return 'other fields than files, format and version'
  if (json.format !== 'targon-sync-manifest' || json.version !== 1) return 'another format or version'
  return isRecord(json.files) ? json.files : 'files is not an object'
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * An entry as serializeManifest writes it: a finite time and a whole size, neither negative, and perhaps a hash; no
 * other key.
 */
function isEntry(value: unknown): value is ManifestEntry {
  if (!isRecord(value)) return false
  const keys = Object.keys(value)
  const {mtime_ms: mtime, sha256, size} = value
  const hashed = sha256 !== undefined
  return (
    keys.length === (hashed ? 3 : 2) &&
    (!hashed || (typeof sha256 === 'string' && SHA256.test(sha256))) &&
    typeof mtime === 'number' &&
    Number.isFinite(mtime) &&
    mtime >= 0 &&
    typeof size === 'number' &&
    Number.isSafeInteger(size) &&
    size >= 0
  )
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const CONTROL = /[\u0000-\u001f\u007f]/

/** Why a path cannot be one the sync sent ('' is no path), or null when it can be. */
export function refusedPath(path: string): string | null {
  if (path.length === 0 || path.length > MAX_PATH_CHARS) return 'an empty or overlong path'
  if (path.startsWith('/')) return 'an absolute path'
  if (CONTROL.test(path)) return 'a control character'
  // One pass over the components, without splitting: a manifest holds thousands of paths (figure 16).
  for (let start = 0; start <= path.length;) {
    const slash = path.indexOf('/', start)
    const end = slash < 0 ? path.length : slash
    const part = path.slice(start, end)
    if (part === '' || part === '.' || part === '..') return 'an empty, "." or ".." component'
    if (part.length > MAX_NAME_CHARS) return 'an overlong name'
    if (part === '.git' || (start === 0 && part === 'targon-out')) return 'a path the sync never sends'
    start = end + 1
  }
  return null
}

/** The files of a manifest's text, or why it is refused. */
export function parseManifest(text: string): {files: Map<string, ManifestEntry>} | {refused: string} {
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) return {refused: `larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`}
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return {refused: 'not JSON'}
  }

  const recorded = filesOf(json)
  if (typeof recorded === 'string') return {refused: `not a sync manifest (${recorded})`}
  const files = new Map<string, ManifestEntry>()
  for (const [path, entry] of Object.entries(recorded)) {
    const refused = refusedPath(path)
    if (refused) return {refused: `${JSON.stringify(path.slice(0, 100))}: ${refused}`}
    if (!isEntry(entry))
      return {refused: `not a sync manifest (${JSON.stringify(path.slice(0, 100))}: a size and a time, perhaps with a hash, expected)`}
    files.set(path, {mtime_ms: entry.mtime_ms, size: entry.size, ...(entry.sha256 === undefined ? {} : {sha256: entry.sha256})})
  }

  return {files}
}

export function serializeManifest(files: Map<string, ManifestEntry>): string {
  const sorted = Object.fromEntries([...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return `${JSON.stringify({files: sorted, format: 'targon-sync-manifest', version: 1})}\n`
}

/** What the VM holds at a path of the tree: its lstat; null when nothing; 'blocked' when a parent is no real directory. */
export type RemoteState = {kind: 'dir' | 'file' | 'link' | 'other'; size: number; mtime: number; mode: number} | null | 'blocked'

/** The whole seconds the VM keeps of a local modification time. */
export function remoteSeconds(mtimeMs: number): number {
  return Math.max(0, Math.floor(mtimeMs / 1000))
}

export interface SyncPlan {
  /** Nothing to send; `chmod` when only the permission bits differ on the VM. */
  unchanged: {file: LocalFile; chmod: boolean}[]
  /** Same size, a time differs: compare contents. */
  compare: LocalFile[]
  send: LocalFile[]
  /** In the manifest, not among the local files to send: removal candidates (see removal). */
  gone: string[]
}

/** `manifest` null: it was refused, so everything is sent. */
export function planSync(
  files: readonly LocalFile[],
  remote: (rel: string) => RemoteState,
  manifest: ReadonlyMap<string, ManifestEntry> | null,
): SyncPlan {
  const plan: SyncPlan = {compare: [], gone: [], send: [], unchanged: []}
  for (const file of files) {
    const there = remote(file.rel)
    if (manifest === null || there === null || there === 'blocked' || there.kind !== 'file' || there.size !== file.size) {
      plan.send.push(file)
      continue
    }

    const recorded = manifest.get(file.rel)
    if (recorded?.size === file.size && recorded.mtime_ms === file.mtimeMs && there.mtime === remoteSeconds(file.mtimeMs))
      plan.unchanged.push({chmod: (there.mode & 0o777) !== file.mode, file})
    else plan.compare.push(file)
  }

  const sent = new Set(files.map((file) => file.rel))
  if (manifest) for (const rel of manifest.keys()) if (!sent.has(rel)) plan.gone.push(rel)
  return plan
}

/**
 * What becomes of a file an earlier sync placed that is not to be sent now: 'keep' while it still exists locally (now
 * ignored, or no longer a regular file: not gone, so it stays, and stays recorded); 'forget' when the VM no longer has
 * it as placed (removed, or changed there: the VM's own now, never touched); 'remove' when it is gone locally and the
 * VM still has it exactly as placed.
 */
export function removal(entry: ManifestEntry, there: RemoteState, existsLocally: boolean): 'keep' | 'forget' | 'remove' {
  if (existsLocally) return 'keep'
  if (there === null || there === 'blocked' || there.kind !== 'file') return 'forget'
  return there.size === entry.size && there.mtime === remoteSeconds(entry.mtime_ms) ? 'remove' : 'forget'
}
