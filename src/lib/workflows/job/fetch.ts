/**
 * Brings a job's --out paths home: each relative to the job's directory on the VM, over the VM's pinned SFTP
 * connection, into ./targon-out/<job>/ (or the config directory's job store), within a bound (copy/budget.ts). The
 * VM's tree is untrusted: a path whose real location leaves the job's directory is refused, the copy never writes
 * outside its root, and the fetch stops at its bound in files and bytes, or where the local disk would fill.
 */
import {mkdir} from 'node:fs/promises'
import {dirname, join, posix} from 'node:path'

import type {SshSession} from '../../adapters/ssh/session.js'
import {LocalSide, RemoteSide} from '../copy/sides.js'
import {copyTree} from '../copy/tree.js'
import type {CopyBudget} from '../copy/budget.js'
import {safeJoin} from '../copy/paths.js'
import type {JobRecord} from './job.js'
import type {FetchResult} from './schema.js'

/** Where a job's outputs come home: ./targon-out/<job id>/, relative to the directory the command runs in. */
export function outputsDir(id: string): string {
  return join('targon-out', id)
}

export function emptyFetch(): FetchResult {
  return {bytes: 0, copied: [], destination: null, failed: [], skipped: []}
}

/**
 * Copies each --out path of the job (relative to its directory on the VM, files or trees) into `root`
 * (./targon-out/<job>/, named by the id the user gave), keeping its relative path. A path whose real location leaves
 * the job's directory (through a link) is refused; the file that would pass the budget ends the fetch as failed.
 */
export async function fetchOutputs(
  session: SshSession,
  record: JobRecord,
  into: {root: string; budget: CopyBudget; signal?: AbortSignal},
): Promise<FetchResult> {
  const {budget, root, signal} = into
  const fetch = emptyFetch()
  if (record.out.length === 0) return fetch
  fetch.destination = `${root}/`
  const remote = new RemoteSide(await session.sftp(), (listener) => session.onLost(listener))
  const local = new LocalSide()
  // A job's directory that is gone (or unreadable) fails each path, as jobs fetch and the sweep report them.
  const base = await remote.realpath(record.workdir).catch(() => null)
  for (const out of record.out) {
    try {
      if (base === null) throw new Error(`the job's directory ${record.workdir} is gone on the VM`)
      const real = await remote.realpath(posix.join(record.workdir, out)).catch(() => {
        throw new Error('no such file or directory on the VM')
      })
      if (real !== base && !real.startsWith(`${base}/`)) throw new Error("it leads out of the job's directory on the VM")
      const entry = await remote.stat(real)
      if (entry?.kind !== 'dir' && entry?.kind !== 'file') throw new Error('not a regular file or directory on the VM')
      const target = safeJoin(root, out)
      await mkdir(dirname(target), {mode: 0o755, recursive: true})
      const outcome = await copyTree(remote, local, real, entry, target, out, {budget, lost: () => remote.lostReason, signal})
      fetch.copied.push(...outcome.copied)
      fetch.failed.push(...outcome.failed)
      fetch.skipped.push(...outcome.skipped)
      fetch.bytes += outcome.bytes
      if (outcome.stopped) {
        fetch.failed.push({error: outcome.stopped, path: out})
        break
      }
    } catch (error) {
      fetch.failed.push({error: error instanceof Error ? error.message : String(error), path: out})
    }
  }

  return fetch
}
