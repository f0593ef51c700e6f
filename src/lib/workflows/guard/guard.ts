/**
 * The guard: `targon sweep` on a schedule, from cron or a systemd timer, for one config directory and profile. This
 * file says what is scheduled (the command, the crontab lines, the units) and reads back what is installed, from the
 * marker each entry carries. Nothing secret is ever written here: the sweep reads its key, notify and heartbeat URLs
 * from the config directory at run time; the entry holds only absolute paths, the directory and the profile, because
 * cron and systemd give it no environment.
 */
import {createHash} from 'node:crypto'
import {join} from 'node:path'

import {TargonError, usageError} from '../../core/errors.js'

export type GuardKind = 'cron' | 'systemd'

/** What one guard runs, and for whom. */
export interface GuardSpec {
  configDir: string
  profile: string
  org: string
  /** The owner it sweeps for in a shared org; null for none (always for a team guard). */
  owner: string | null
  /** The org's team guard (guard install --team): it sweeps every owner's VMs over the team guard's key. */
  team: boolean
  /** Absolute paths: cron and systemd have no PATH worth the name. */
  node: string
  cli: string
  everyMs: number
}

/** What a marker says of an installed guard. */
export interface GuardMarker {
  configDir: string
  profile: string
  org: string
  owner: string | null
  team: boolean
}

/**
 * Characters a path may have to be written into a crontab line or a unit unquoted: no space, no quote, no `%` (cron
 * makes it a newline, systemd a specifier), no `$`, no `;`. A path with others is refused, with the fix.
 */
const PLAIN_PATH = /^\/[A-Za-z0-9._+@/-]*$/

export function checkPlainPath(path: string, what: string): string {
  if (!PLAIN_PATH.test(path))
    throw new TargonError(
      'CONFIG',
      `the ${what} path ${JSON.stringify(path)} has characters a crontab line or a unit cannot carry safely`,
      {
        hint: `use a path of letters, digits and . _ + @ / - only (for the config directory: TARGON_CONFIG_DIR)`,
      },
    )
  return path
}

/** The schedules a guard takes: minutes that divide an hour, hours that divide a day. */
const MINUTES = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30]
const HOURS = [1, 2, 3, 4, 6, 8, 12]

/** Checks --every: a period that cron and systemd can both keep exactly. */
export function checkEvery(ms: number): number {
  const minutes = ms / 60_000
  if (MINUTES.includes(minutes) || (minutes % 60 === 0 && HOURS.includes(minutes / 60))) return ms
  throw usageError(
    '--every must divide an hour or a day evenly',
    `use one of ${MINUTES.map((each) => `${each}m`).join(', ')}, ${HOURS.map((each) => `${each}h`).join(', ')}`,
  )
}

/** The cron schedule of a period (see checkEvery). */
export function cronSchedule(everyMs: number): string {
  const minutes = everyMs / 60_000
  if (minutes < 60) return minutes === 1 ? '* * * * *' : `*/${minutes} * * * *`
  const hours = minutes / 60
  return hours === 1 ? '0 * * * *' : `0 */${hours} * * *`
}

/** The systemd calendar of a period (see checkEvery). */
export function calendarOf(everyMs: number): string {
  const minutes = everyMs / 60_000
  return minutes < 60 ? `*-*-* *:00/${minutes}:00` : `*-*-* 00/${minutes / 60}:00:00`
}

/** The next time the schedule fires after `now`, by this machine's clock (as cron and systemd keep it). */
export function nextPass(everyMs: number, now: number): number {
  const next = new Date(now)
  next.setSeconds(0, 0)
  const minutes = everyMs / 60_000
  if (minutes < 60) {
    next.setMinutes(next.getMinutes() + 1)
    while (next.getMinutes() % minutes !== 0) next.setMinutes(next.getMinutes() + 1)
  } else {
    next.setMinutes(0)
    next.setHours(next.getHours() + 1)
    while (next.getHours() % (minutes / 60) !== 0) next.setHours(next.getHours() + 1)
  }

  return next.getTime()
}

/** Where the guard's passes keep their output and their records: the config directory, beside the VMs' records. */
export function guardDir(configDir: string): string {
  return join(configDir, 'guard')
}

export function logFile(configDir: string, profile: string): string {
  return join(guardDir(configDir), `${profile}.log`)
}

/** The scheduled command, without redirection: absolute paths, the directory by variable, the profile by flag. */
export function sweepArgv(spec: Pick<GuardSpec, 'cli' | 'node' | 'profile' | 'team'>): string[] {
  return [spec.node, spec.cli, 'sweep', '--profile', spec.profile, '--guard', ...(spec.team ? ['--team'] : []), '--json']
}

const MARKER_PREFIX = '# targon guard:'

export function markerLine(spec: GuardMarker): string {
  return `${MARKER_PREFIX} org=${spec.org} owner=${spec.owner ?? '-'} profile=${spec.profile} dir=${spec.configDir}${spec.team ? ' team' : ''} (targon guard uninstall removes it)`
}

/** The marker of a line, if it is one (a marker without the word team, as every guard before the team guard wrote it, is a local guard's). */
export function parseMarker(line: string): GuardMarker | undefined {
  const match = /^# targon guard: org=(\S+) owner=(\S+) profile=(\S+) dir=(\S+) (team )?\(/.exec(line)
  if (!match) return undefined
  const [, org, owner, profile, configDir, team] = match as unknown as [string, string, string, string, string, string | undefined]
  return {configDir, org, owner: owner === '-' ? null : owner, profile, team: team !== undefined}
}

/** The two crontab lines of a guard: its marker, then the entry. */
export function cronLines(spec: GuardSpec): string[] {
  return [
    markerLine(spec),
    `${cronSchedule(spec.everyMs)} TARGON_CONFIG_DIR=${spec.configDir} ${sweepArgv(spec).join(' ')} >>${logFile(spec.configDir, spec.profile)} 2>&1`,
  ]
}

/** A unit name that is the same for the same directory and profile, and safe anywhere. */
export function unitName(spec: Pick<GuardSpec, 'configDir' | 'profile'>): string {
  return `targon-guard-${createHash('sha256').update(`${spec.configDir}\0${spec.profile}`).digest('hex').slice(0, 12)}`
}

/**
 * The service and the timer of a guard, by file name. `user`: whom a system unit runs the sweep as (see unitUser);
 * null for user units, which run as their user.
 */
export function systemdUnits(spec: GuardSpec, user: string | null): Record<string, string> {
  const name = unitName(spec)
  const what = `targon sweep${spec.team ? ' --team' : ''} of ${spec.configDir} (profile ${spec.profile})`
  const log = logFile(spec.configDir, spec.profile)
  return {
    [`${name}.service`]: [
      markerLine(spec),
      '[Unit]',
      `Description=${what}`,
      'After=network-online.target',
      'Wants=network-online.target',
      '',
      '[Service]',
      'Type=oneshot',
      ...(user === null ? [] : [`User=${user}`]),
      `Environment=TARGON_CONFIG_DIR=${spec.configDir}`,
      `ExecStart=${sweepArgv(spec).join(' ')}`,
      `StandardOutput=append:${log}`,
      `StandardError=append:${log}`,
      '',
    ].join('\n'),
    [`${name}.timer`]: [
      markerLine(spec),
      '[Unit]',
      `Description=Schedule of ${what}`,
      '',
      '[Timer]',
      `OnCalendar=${calendarOf(spec.everyMs)}`,
      'Persistent=true',
      '',
      '[Install]',
      'WantedBy=timers.target',
      '',
    ].join('\n'),
  }
}

/** The period of an installed entry, from its schedule (cron line or OnCalendar); null when it is not one of ours. */
export function everyOf(text: string): number | null {
  const cron = /^(\*|\*\/(\d+)|0) (\*|\*\/(\d+)) \* \* \* /m.exec(text)
  if (cron) {
    if (cron[1] === '*') return 60_000
    if (cron[2]) return Number(cron[2]) * 60_000
    return (cron[4] ? Number(cron[4]) : 1) * 3_600_000
  }

  const calendar = /^OnCalendar=\*-\*-\* (?:\*:00\/(\d+):00|00\/(\d+):00:00)$/m.exec(text)
  if (calendar) return calendar[1] ? Number(calendar[1]) * 60_000 : Number(calendar[2]) * 3_600_000
  return null
}
