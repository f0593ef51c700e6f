/**
 * The working directory of `targon run`, looked at before anything is rented or connected to: refused when it lies
 * in what a sync never sends, or when it is a home directory or `/` that --workdir did not name (one `cd` away from
 * sending everything there), and laid out for --dry-run (what the sync would look at, and what it holds back).
 */
import {realpathSync} from 'node:fs'
import {posix} from 'node:path'

import {usageError} from '../../core/errors.js'
import {countOf} from '../../core/output.js'
import {formatBytes} from '../copy/budget.js'
import {type NeverSentDir, homeDirs, refuseInsideNeverSent} from '../sync/held-back.js'
import {walkLocal} from '../sync/walk.js'
import {WORK_ROOT, workdirIdOf} from './job.js'
import type {JobPlan} from './schema.js'

/**
 * A refusal looks at this many files and directories at most: a home directory can hold millions, and "at least
 * thousands of files" makes the point. Under / on a machine whose /tmp held 78,000 directories, counting 10,000 files
 * took 16 s; counting entries stops in well under a second.
 */
const MAX_COUNTED_ENTRIES = 10_000

/**
 * Refuses (exit 2) a working directory inside a directory that is never sent, and one that is a home directory ($HOME
 * or the password database's) or `/` unless --workdir named it (`explicit`), saying what the sync would send.
 */
export async function checkWorkdir(localDir: string, explicit: boolean, neverSent: readonly NeverSentDir[]): Promise<void> {
  refuseInsideNeverSent(localDir, neverSent)
  if (explicit) return
  const real = realpathSync(localDir)
  const home = homeDirs().some((each) => realpathOrNull(each) === real)
  if (real !== '/' && !home) return
  const tree = await walkLocal(localDir, {maxEntries: MAX_COUNTED_ENTRIES, neverSent}).catch(() => null)
  const bytes = tree?.files.reduce((sum, file) => sum + file.size, 0) ?? 0
  const what =
    tree === null
      ? 'whatever it can read there'
      : `${tree.complete ? '' : 'at least '}${countOf(tree.files.length, 'file')} (${formatBytes(bytes)})`
  throw usageError(
    `the working directory is ${real === '/' ? 'the root directory' : 'your home directory'} ${localDir}: run would send ${what} to the VM`,
    `run from the project's directory, or name it with --workdir ${localDir} to send it`,
  )
}

/** What the sync of `localDir` would look at and hold back (run --dry-run): it reads only this machine. */
export async function planSync(localDir: string, neverSent: readonly NeverSentDir[]): Promise<NonNullable<JobPlan['sync']>> {
  const tree = await walkLocal(localDir, {neverSent})
  return {
    bytes: tree.files.reduce((sum, file) => sum + file.size, 0),
    files: tree.files.map((file) => ({bytes: file.size, path: file.rel})),
    held_back: tree.heldBack,
    local_dir: localDir,
    remote_dir: posix.join(WORK_ROOT, workdirIdOf(localDir)),
  }
}

function realpathOrNull(path: string): string | null {
  try {
    return realpathSync(path)
  } catch {
    return null
  }
}
