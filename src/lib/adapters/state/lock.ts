/**
 * A cross-process lock on a file. The file names its holder (pid and, on Linux, the process
 * start time, so that a recycled pid is not mistaken for the holder). Another process takes
 * the lock over only when that holder is dead, never because the lock is old: a DELETE that
 * Targon takes minutes to answer must keep its lock for as long as it is in flight.
 */
import {mkdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {userInfo} from 'node:os'
import {dirname, join} from 'node:path'

import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {poll} from '../../core/poll.js'
import {BACKOFF} from '../../core/backoff.js'
import {TargonError} from '../../core/errors.js'

import {childPath} from './paths.js'
import {assertOwnDir} from './trust.js'

export interface LockOptions {
  /** How long to wait for a live holder. */
  timeoutMs: number
  /** Called once when the lock is held by another live process (or by this one, for another task). */
  onWait?: () => void
  /** What the wait for a live holder runs on: the real clock, as the holder is another process (a test may fake it). */
  clock?: Clock
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
  const clock = options.clock ?? REAL_CLOCK
  const me = lockHolderText(path)
  let waited = false
  const taken = await poll(
    async () => {
      if (take(path, me)) return true
      if (!waited) options.onWait?.()
      waited = true
      return undefined
    },
    {clock, deadline: clock.now() + options.timeoutMs, delayMs: BACKOFF.lockLook},
  )
  if (!taken)
    throw new TargonError('TIMEOUT', `waited too long for the lock ${path}`, {
      hint: `if no other targon process is running, delete ${path}`,
    })

  try {
    return await critical(waited)
  } finally {
    rmSync(path, {force: true})
  }
}

/**
 * Runs `critical` under the lock if no live process holds it now; `{ran: false}` at once otherwise, without waiting:
 * for work that a second run should skip rather than repeat (a scheduled sweep).
 */
export async function ifFileLockFree<T>(path: string, critical: () => Promise<T>): Promise<{ran: true; value: T} | {ran: false}> {
  if (!take(path, lockHolderText(path))) return {ran: false}
  try {
    return {ran: true, value: await critical()}
  } finally {
    rmSync(path, {force: true})
  }
}

/** Creates the lock's directory and returns what the lock file says of this process. */
function lockHolderText(path: string): string {
  mkdirSync(dirname(path), {mode: 0o700, recursive: true})
  return JSON.stringify({pid: process.pid, started: processStart(process.pid)} satisfies Holder)
}

/** Takes the lock when its file can be created; a dead holder's file is taken over and tried once more at once. */
function take(path: string, me: string): boolean {
  if (createLockFile(path, me)) return true
  const holder = readHolder(path)
  if (holder === undefined || holderAlive(path, holder)) return false
  takeOver(path, holder)
  return createLockFile(path, me)
}

function createLockFile(path: string, me: string): boolean {
  try {
    writeFileSync(path, me, {flag: 'wx', mode: 0o600})
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return false
  }
}

/**
 * The lock that keeps two DELETEs of one workload from being in flight at once, across every run of this user,
 * whatever its config directory or environment: it lives under the home directory that the password database gives
 * (~/.local/state/targon-fleet/locks), never where HOME, TMPDIR or XDG_RUNTIME_DIR point, so that cron and an
 * interactive shell lock in one place and no other user can create it first. A user without a usable home of its
 * own (no entry in the password database, as in some containers, or a home it cannot write) locks in the config
 * directory, which is checked as private: runs with other config directories are then not kept apart. A lock
 * directory that is there but not private is refused, never worked around. Keyed by org and uid.
 */
export function deleteLockPath(org: string, uid: string, configDir: string, home: string | null = homeOfUser()): string {
  const state = home === null ? undefined : join(home, '.local', 'state', 'targon-fleet')
  let base = state === undefined ? undefined : join(state, 'locks')
  if (base !== undefined) {
    try {
      mkdirSync(base, {mode: 0o700, recursive: true})
    } catch {
      base = undefined
    }
  }

  if (state !== undefined && base !== undefined) {
    assertOwnDir(state, 'lock directory')
    assertOwnDir(base, 'lock directory')
  } else {
    base = join(configDir, 'locks')
    mkdirSync(base, {mode: 0o700, recursive: true})
    assertOwnDir(base, 'lock directory')
  }

  return childPath(childPath(join(base, 'delete'), org), uid, '.lock')
}

/** The home directory of this user in the password database; null without an entry there. */
function homeOfUser(): string | null {
  try {
    return userInfo().homedir || null
  } catch {
    return null
  }
}

/** The lock file's text, or undefined when it is gone. */
function readHolder(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Removes a dead holder's lock. Two processes may find it dead at once: only the one that creates the takeover
 * marker removes it, and only if it still holds the text judged dead, so that neither removes a lock the other
 * has just taken (new locks are only ever created, never overwritten). A marker left by a process that died in
 * this window of microseconds is taken as stale after a few seconds.
 */
function takeOver(path: string, deadHolder: string): void {
  const marker = `${path}.takeover`
  try {
    writeFileSync(marker, String(process.pid), {flag: 'wx', mode: 0o600})
  } catch {
    if (olderThan(marker, STALE_WRITE_MS)) rmSync(marker, {force: true})
    return
  }

  try {
    if (readHolder(path) === deadHolder) rmSync(path, {force: true})
  } finally {
    rmSync(marker, {force: true})
  }
}

function holderAlive(path: string, text: string): boolean {
  let holder: Holder
  try {
    holder = JSON.parse(text) as Holder
  } catch {
    // An empty file is being written by its holder right now, unless it has been empty for seconds (a crash
    // between creating and writing it); anything else unreadable is garbage from a crash.
    return text === '' && !olderThan(path, STALE_WRITE_MS)
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

/** Writing a lock file takes microseconds: one still empty (or a takeover marker still there) after this is stale. */
const STALE_WRITE_MS = 5000

function olderThan(path: string, ms: number): boolean {
  try {
    // A file's modification time is on the real clock.
    return REAL_CLOCK.now() - statSync(path).mtimeMs > ms
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
