/**
 * Sends a local working directory to a directory on the VM over the session's SFTP channel. This version sends every
 * regular file of the tree each time (links are skipped with a warning, as cp does) and records what it sent in the
 * manifest; the incremental engine (ignore rules, unchanged files skipped, removals) keeps this same interface.
 */
import {posix} from 'node:path'

import {TargonError} from '../core/errors.js'
import {LocalSide, RemoteSide} from '../copy/sides.js'
import {copyTree} from '../copy/tree.js'
import {type SshSession, shellQuote} from '../ssh/session.js'

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
}

export async function syncWorkdir(session: SshSession, options: SyncOptions): Promise<SyncReport> {
  const made = await session.exec(`mkdir -p ${shellQuote(options.remoteDir)} ${shellQuote(posix.dirname(options.manifestPath))}`, {
    maxBytes: 64 * 1024,
    signal: options.signal,
  })
  if (made.code !== 0) throw syncError(`cannot create ${options.remoteDir} on the VM: ${made.stderr.trim()}`)
  const local = new LocalSide()
  const entry = await local.stat(options.localDir)
  if (entry?.kind !== 'dir') throw new TargonError('NOT_FOUND', `${options.localDir}: no such directory`)
  const remote = new RemoteSide(await session.sftp(), (listener) => session.onLost(listener))
  const outcome = await copyTree(local, remote, options.localDir, entry, options.remoteDir, posix.basename(options.localDir), {
    lost: () => remote.lostReason,
    signal: options.signal,
  })
  const links = outcome.skipped.filter((skipped) => /link/.test(skipped.reason))
  for (const skipped of outcome.skipped) options.warn(`${skipped.path}: not sent (${skipped.reason})`)
  if (outcome.stopped) throw syncError(`the sync stopped: ${outcome.stopped}`)
  const failed = outcome.failed[0]
  if (failed) throw syncError(`${failed.path}: ${failed.error}`)
  const manifest = await session.exec(`cat > ${shellQuote(options.manifestPath)}`, {
    maxBytes: 64 * 1024,
    stdin: `${JSON.stringify({files: outcome.copied})}\n`,
  })
  if (manifest.code !== 0) throw syncError(`cannot write the manifest on the VM: ${manifest.stderr.trim()}`)
  return {bytes_sent: outcome.bytes, files_removed: 0, files_sent: outcome.copied.length, links_skipped: links.length}
}

function syncError(message: string): TargonError {
  return new TargonError('COPY_FAILED', message, {hint: 'check the free space and permissions on the VM, then run again'})
}
