/**
 * The guards installed on this machine for this user, where install writes them: the user's crontab (through the
 * real `crontab` command, which is the only sanctioned way to change it), and systemd units (system units as root,
 * user units otherwise).
 */
import {spawnSync} from 'node:child_process'
import {mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {homedir, userInfo} from 'node:os'
import {join} from 'node:path'

import {TargonError} from '../../core/errors.js'
import {type GuardKind, type GuardMarker, everyOf, parseMarker} from './guard.js'

export interface InstalledGuard {
  kind: GuardKind
  marker: GuardMarker
  /** The schedule's period; null when the entry was edited into something else. */
  everyMs: number | null
  /** The node and CLI paths the entry runs. */
  node: string | null
  cli: string | null
  /** The unit files (systemd), or null (cron). */
  files: string[] | null
}

/** Same directory and profile: the same guard. */
export function sameGuard(a: Pick<GuardMarker, 'configDir' | 'profile'>, b: Pick<GuardMarker, 'configDir' | 'profile'>): boolean {
  return a.configDir === b.configDir && a.profile === b.profile
}

/** This user's crontab; empty when there is none; null when cron is not installed. */
export function readCrontab(): string | null {
  const listed = runCrontab(['-l'])
  if (listed === null) return null
  if (listed.status === 0) return listed.stdout
  if (/no crontab/i.test(listed.stderr)) return ''
  throw new TargonError('CONFIG', `crontab -l failed: ${listed.stderr.trim() || `exit ${listed.status}`}`, {
    hint: 'check that cron lets this user have a crontab (/etc/cron.allow, /etc/cron.deny)',
  })
}

export function writeCrontab(text: string): void {
  const written = runCrontab(['-'], text)
  if (written === null) throw cronMissing()
  if (written.status !== 0)
    throw new TargonError('CONFIG', `crontab could not be written: ${written.stderr.trim() || `exit ${written.status}`}`, {
      hint: 'check that cron lets this user have a crontab (/etc/cron.allow, /etc/cron.deny)',
    })
}

export function cronMissing(): TargonError {
  return new TargonError('CONFIG', 'crontab is not installed on this machine', {
    hint: 'install cron (apt-get install cron), or use --systemd',
  })
}

/** Runs crontab; null when there is no crontab command. */
function runCrontab(args: string[], input?: string): {status: number | null; stdout: string; stderr: string} | null {
  const child = spawnSync('crontab', args, {encoding: 'utf8', input, timeout: 30_000})
  if (child.error && 'code' in child.error && child.error.code === 'ENOENT') return null
  return {status: child.status, stderr: child.stderr ?? '', stdout: child.stdout ?? ''}
}

/** The guards of a crontab: each marker line and the entry after it. */
export function cronGuards(crontab: string): InstalledGuard[] {
  const lines = crontab.split('\n')
  return lines.flatMap((line, index) => {
    const marker = parseMarker(line)
    if (!marker) return []
    const entry = lines[index + 1] ?? ''
    const command = / TARGON_CONFIG_DIR=\S+ (\S+) (\S+) sweep /.exec(entry)
    return [{cli: command?.[2] ?? null, everyMs: everyOf(entry), files: null, kind: 'cron' as const, marker, node: command?.[1] ?? null}]
  })
}

/** Whether a crontab line is the entry install writes for this directory and profile (see cronLines). */
export function isGuardEntry(line: string, guard: Pick<GuardMarker, 'configDir' | 'profile'>): boolean {
  const match = /^(?:\S+ ){5}TARGON_CONFIG_DIR=(\S+) \S+ \S+ sweep --profile (\S+) --guard /.exec(line)
  return match !== null && match[1] === guard.configDir && match[2] === guard.profile
}

/**
 * The crontab without the guard of this directory and profile: each marker of it with the entry after it. A marker
 * whose next line is not that entry (edited by hand) is kept with that line, and counted in `left`.
 */
export function withoutCronGuard(
  crontab: string,
  guard: Pick<GuardMarker, 'configDir' | 'profile'>,
): {text: string; removed: InstalledGuard[]; left: number} {
  const lines = crontab.split('\n')
  const kept: string[] = []
  const removed: InstalledGuard[] = []
  let left = 0
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string
    const marker = parseMarker(line)
    if (marker && sameGuard(marker, guard)) {
      const entry = lines[index + 1] ?? ''
      if (isGuardEntry(entry, guard)) {
        removed.push(...cronGuards(`${line}\n${entry}`))
        index++
        continue
      }

      left++
    }

    kept.push(line)
  }

  return {left, removed, text: kept.join('\n')}
}

/** Where root's units go: the system unit directory. */
export const SYSTEM_UNIT_DIR = '/etc/systemd/system'

/** Where this user's units go: system units as root, user units otherwise. */
export function unitDir(env: NodeJS.ProcessEnv = process.env): string {
  return process.getuid?.() === 0 ? SYSTEM_UNIT_DIR : userUnitDir(env)
}

/**
 * Whom a system unit runs its sweep as: the owner of the config directory, never root by default. The trust rules
 * make that the installing user (sudo with another user's directory is refused before this), so root's directory
 * gives User=root, said explicitly. Null for user units, which run as their user.
 */
export function unitUser(configDir: string): string | null {
  if (unitDir() !== SYSTEM_UNIT_DIR) return null
  const owner = statSync(configDir).uid
  return owner === process.getuid?.() ? userInfo().username : String(owner)
}

export function userUnitDir(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(config, 'systemd', 'user')
}

/** The guards among the units of a directory, by their service file's marker. */
export function systemdGuards(dir: string): InstalledGuard[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }

  return names
    .filter((name) => /^targon-guard-[0-9a-f]{12}\.service$/.test(name))
    .flatMap((name) => {
      const text = readFileSync(join(dir, name), 'utf8')
      const marker = parseMarker(text.split('\n')[0] ?? '')
      if (!marker) return []
      const timer = name.replace(/\.service$/, '.timer')
      const timerText = (() => {
        try {
          return readFileSync(join(dir, timer), 'utf8')
        } catch {
          return ''
        }
      })()
      const command = /^ExecStart=(\S+) (\S+) sweep /m.exec(text)
      return [
        {
          cli: command?.[2] ?? null,
          everyMs: everyOf(timerText),
          files: [join(dir, name), join(dir, timer)],
          kind: 'systemd' as const,
          marker,
          node: command?.[1] ?? null,
        },
      ]
    })
}

export function writeUnits(dir: string, units: Record<string, string>): string[] {
  mkdirSync(dir, {mode: 0o755, recursive: true})
  return Object.entries(units).map(([name, text]) => {
    const path = join(dir, name)
    writeFileSync(path, text, {mode: 0o644})
    return path
  })
}

export function removeFiles(files: string[]): void {
  for (const file of files) rmSync(file, {force: true})
}

/** Runs systemctl (daemon-reload, enable, disable); false when it cannot (no systemd running here), with why. */
export function systemctl(args: string[]): {ok: boolean; problem: string | null} {
  const user = process.getuid?.() === 0 ? [] : ['--user']
  const child = spawnSync('systemctl', [...user, ...args], {encoding: 'utf8', timeout: 30_000})
  if (child.error) return {ok: false, problem: (child.error as NodeJS.ErrnoException).code ?? child.error.message}
  return child.status === 0
    ? {ok: true, problem: null}
    : {ok: false, problem: (child.stderr ?? '').trim().split('\n')[0] || `exit ${child.status}`}
}
