/**
 * What the guard's passes (each a sweep its schedule started) leave behind for `guard status`: one line per pass
 * (when, exit code, what it did), the last MAX_PASSES kept, and the log of their output, rotated past MAX_LOG_BYTES so
 * that a guard left for a year stays small.
 */
import {appendFileSync, chmodSync, mkdirSync, renameSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {type GuardPass, GuardPassSchema} from './schema.js'
import {assertOwnDir, readOwnFile} from '../../adapters/state/trust.js'
import {guardDir, logFile} from './guard.js'

const MAX_PASSES = 50
const MAX_LOG_BYTES = 1024 * 1024

/** `<profile>.runs` on disk: the name the config directories already hold. */
function passesFile(configDir: string, profile: string): string {
  return join(guardDir(configDir), `${profile}.runs`)
}

export function ensureGuardDir(configDir: string): void {
  mkdirSync(guardDir(configDir), {mode: 0o700, recursive: true})
  assertOwnDir(guardDir(configDir), 'guard directory')
}

function installedFile(configDir: string, profile: string): string {
  return join(guardDir(configDir), `${profile}.installed`)
}

/** When install last wrote the guard: what tells a guard that never ran from one just installed. */
export function recordInstall(configDir: string, profile: string, at: number): void {
  ensureGuardDir(configDir)
  writeFileSync(installedFile(configDir, profile), `${new Date(at).toISOString()}\n`, {mode: 0o600})
}

/** The install time recorded, or null (none, or a guard installed before it was recorded). */
export function readInstalledAt(configDir: string, profile: string): number | null {
  try {
    const at = Date.parse(readOwnFile(installedFile(configDir, profile)).trim())
    return Number.isNaN(at) ? null : at
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/** Appends a pass; past MAX_PASSES the oldest are dropped. */
export function recordPass(configDir: string, profile: string, pass: GuardPass): void {
  ensureGuardDir(configDir)
  const file = passesFile(configDir, profile)
  const passes = [...readPasses(configDir, profile), pass]
  if (passes.length > MAX_PASSES)
    writeFileSync(
      file,
      passes
        .slice(-MAX_PASSES)
        .map((each) => `${JSON.stringify(each)}\n`)
        .join(''),
      {mode: 0o600},
    )
  else appendFileSync(file, `${JSON.stringify(pass)}\n`, {mode: 0o600})
}

/** The passes recorded, oldest first; lines that do not parse (a crash mid-write) are skipped. */
export function readPasses(configDir: string, profile: string): GuardPass[] {
  let text: string
  try {
    text = readOwnFile(passesFile(configDir, profile))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }

  return text.split('\n').flatMap((line) => {
    try {
      const parsed = GuardPassSchema.safeParse(JSON.parse(line))
      return parsed.success ? [parsed.data] : []
    } catch {
      return []
    }
  })
}

/**
 * Past MAX_LOG_BYTES the log becomes `<log>.1` (the one before is dropped). The pass that rotates it still writes to
 * the renamed file (its shell opened it first); the next pass starts a new one: at most about twice the bound in all.
 */
export function rotateLog(configDir: string, profile: string): void {
  ensureGuardDir(configDir)
  const log = logFile(configDir, profile)
  try {
    // The shell (cron) or systemd created it with their umask: private like the rest of the directory.
    chmodSync(log, 0o600)
    if (statSync(log).size > MAX_LOG_BYTES) renameSync(log, `${log}.1`)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
