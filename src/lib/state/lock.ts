/**
 * A cross-process lock on a file. The file names its holder (pid and, on Linux, the process
 * start time, so that a recycled pid is not mistaken for the holder). Another process takes
 * the lock over only when that holder is dead, never because the lock is old: a DELETE that
 * Targon takes minutes to answer must keep its lock for as long as it is in flight.
 */
import {mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {TargonError} from '../shell/errors.js'

export interface LockOptions {
  /** How long to wait for a live holder. */
  timeoutMs: number
  /** Called once when the lock is held by another live process (or by this one, for another task). */
  onWait?: () => void
}

interface Holder {
  pid: number
  started: string | null
}

export async function withFileLock<T>(
  path: string,
  critical: (waited: boolean) => Promise<T>,
  options: LockOptions = {timeoutMs: 90_000},
): Promise<T> {
  mkdirSync(dirname(path), {mode: 0o700, recursive: true})
  const deadline = Date.now() + options.timeoutMs
  const me = JSON.stringify({pid: process.pid, started: processStart(process.pid)} satisfies Holder)
  let waited = false
  for (;;) {
    try {
      writeFileSync(path, me, {flag: 'wx', mode: 0o600})
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      if (!holderAlive(path)) {
        rmSync(path, {force: true})
        continue
      }

      if (!waited) options.onWait?.()
      waited = true
      if (Date.now() > deadline)
        throw new TargonError('TIMEOUT', `waited too long for the lock ${path}`, {
          hint: `if no other targon process is running, delete ${path}`,
        })
      await sleep(50 + Math.random() * 100)
    }
  }

  try {
    return await critical(waited)
  } finally {
    rmSync(path, {force: true})
  }
}

/**
 * The lock that keeps two DELETEs of one workload from being in flight at once, across runs and
 * config directories: it lives in the machine's temporary directory, keyed by org and uid.
 */
export function deleteLockPath(org: string, uid: string): string {
  const user = process.getuid?.() ?? 'user'
  return join(tmpdir(), `targon-fleet-${user}`, 'delete-locks', encodeURIComponent(org), `${encodeURIComponent(uid)}.lock`)
}

function holderAlive(path: string): boolean {
  let holder: Holder
  try {
    holder = JSON.parse(readFileSync(path, 'utf8')) as Holder
  } catch {
    // An empty file is being written by its holder right now; anything else unreadable is garbage from a crash.
    return isEmpty(path)
  }

  if (!Number.isInteger(holder.pid) || holder.pid <= 0) return false
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }

  const started = processStart(holder.pid)
  return holder.started === null || started === null || started === holder.started
}

function isEmpty(path: string): boolean {
  try {
    return readFileSync(path).length === 0
  } catch {
    return false
  }
}

/** The start time of a process in clock ticks since boot (Linux), or null where /proc is not there. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 22; the command name (field 2) is in parentheses and may contain spaces.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}
