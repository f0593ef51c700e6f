/**
 * A cross-process lock on a file, for short critical sections (key registration).
 * A lock older than the stale limit is taken over: its holder crashed.
 */
import {mkdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {dirname} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {TargonError} from './errors.js'

const STALE_MS = 60_000

export async function withFileLock<T>(path: string, critical: () => Promise<T>, timeoutMs = 90_000): Promise<T> {
  mkdirSync(dirname(path), {mode: 0o700, recursive: true})
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      writeFileSync(path, String(process.pid), {flag: 'wx', mode: 0o600})
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      if (isStale(path)) {
        rmSync(path, {force: true})
        continue
      }

      if (Date.now() > deadline) throw new TargonError('TIMEOUT', `waited too long for the lock ${path}`, {hint: `if no other targon process is running, delete ${path}`})
      await sleep(50 + Math.random() * 100)
    }
  }

  try {
    return await critical()
  } finally {
    rmSync(path, {force: true})
  }
}

function isStale(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > STALE_MS
  } catch {
    return false
  }
}
