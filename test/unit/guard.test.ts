/** The guard's schedule, its crontab lines and units, and reading them back: logic alone, on a fixed clock. */
import {chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {delimiter, join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {coverageLine, guardCoverage} from '../../src/lib/workflows/guard/coverage.js'

import {
  type GuardSpec,
  calendarOf,
  checkEvery,
  checkPlainPath,
  cronLines,
  cronSchedule,
  everyOf,
  nextPass,
  systemdUnits,
} from '../../src/lib/workflows/guard/guard.js'
import {type InstalledGuard, cronGuards, withoutCronGuard} from '../../src/lib/workflows/guard/installed.js'
import {guardProblems} from '../../src/lib/workflows/guard/problems.js'
import type {GuardPass} from '../../src/lib/workflows/guard/schema.js'

const SPEC: GuardSpec = {
  cli: '/opt/targon/bin/run.js',
  configDir: '/home/alice/.config/targon-fleet',
  everyMs: 5 * 60_000,
  node: '/usr/bin/node',
  org: 'acme',
  owner: 'alice',
  profile: 'default',
  team: false,
}

describe('guard schedules', () => {
  it('takes periods that divide an hour or a day, and says them to cron and systemd alike', () => {
    expect(cronSchedule(checkEvery(5 * 60_000))).toBe('*/5 * * * *')
    expect(cronSchedule(checkEvery(60_000))).toBe('* * * * *')
    expect(cronSchedule(checkEvery(3_600_000))).toBe('0 * * * *')
    expect(cronSchedule(checkEvery(6 * 3_600_000))).toBe('0 */6 * * *')
    expect(calendarOf(5 * 60_000)).toBe('*-*-* *:00/5:00')
    expect(calendarOf(6 * 3_600_000)).toBe('*-*-* 00/6:00:00')
    for (const ms of [7 * 60_000, 90 * 60_000, 5 * 3_600_000, 90_000]) expect(() => checkEvery(ms)).toThrow('--every must divide')
    for (const ms of [60_000, 10 * 60_000, 2 * 3_600_000]) {
      expect(everyOf(`${cronSchedule(ms)} TARGON_CONFIG_DIR=/x /n /c sweep`)).toBe(ms)
      expect(everyOf(`[Timer]\nOnCalendar=${calendarOf(ms)}\n`)).toBe(ms)
    }
  })

  it('finds the next run after a given time', () => {
    const at = new Date(2026, 11, 1, 10, 7, 30).getTime()
    expect(new Date(nextPass(5 * 60_000, at)).getMinutes()).toBe(10)
    expect(nextPass(5 * 60_000, new Date(2026, 11, 1, 10, 10, 0).getTime())).toBe(new Date(2026, 11, 1, 10, 15).getTime())
    expect(nextPass(6 * 3_600_000, at)).toBe(new Date(2026, 11, 1, 12, 0).getTime())
  })

  it('refuses a path that a crontab line or a unit cannot carry', () => {
    for (const path of ['/home/a b/x', '/tmp/50%', '/tmp/$HOME', 'relative/dir', '/tmp/a;b'])
      expect(() => checkPlainPath(path, 'config directory')).toThrow()
    expect(checkPlainPath('/home/alice/.config/targon-fleet', 'config directory')).toBe('/home/alice/.config/targon-fleet')
  })
})

describe('guard entries', () => {
  it("marks the team guard's entry and unit, runs sweep --team, and reads a marker written before the team guard as a local one", () => {
    const team: GuardSpec = {...SPEC, owner: null, team: true}
    const [marker, entry] = cronLines(team) as [string, string]
    expect(marker).toBe(`# targon guard: org=acme owner=- profile=default dir=${SPEC.configDir} team (targon guard uninstall removes it)`)
    expect(entry).toContain(' sweep --profile default --guard --team --json >>')
    expect(cronGuards(`${marker}\n${entry}\n`)[0]?.marker).toEqual({
      configDir: SPEC.configDir,
      org: 'acme',
      owner: null,
      profile: 'default',
      team: true,
    })
    expect(withoutCronGuard(`${marker}\n${entry}\n`, team)).toMatchObject({left: 0, removed: [{marker: {team: true}}]})
    const service = systemdUnits(team, null)
    expect(Object.values(service)[0]).toContain(' sweep --profile default --guard --team --json\n')
    const before = `# targon guard: org=acme owner=alice profile=default dir=${SPEC.configDir} (targon guard uninstall removes it)`
    expect(cronGuards(`${before}\n${cronLines(SPEC)[1]}\n`)[0]?.marker.team).toBe(false)
  })

  it('writes a marker and an entry, reads them back, and removes exactly them', () => {
    const mine = `MAILTO=ops@example.com\n17 3 * * * /bin/true\n`
    const crontab = `${mine}${cronLines(SPEC).join('\n')}\n`
    expect(cronGuards(crontab)).toEqual([
      {
        cli: SPEC.cli,
        everyMs: SPEC.everyMs,
        files: null,
        kind: 'cron',
        marker: {configDir: SPEC.configDir, org: 'acme', owner: 'alice', profile: 'default', team: false},
        node: SPEC.node,
      },
    ])
    expect(withoutCronGuard(crontab, SPEC)).toMatchObject({left: 0, removed: [{kind: 'cron', node: SPEC.node}], text: mine})
    // Another profile's guard of the same directory stays.
    expect(withoutCronGuard(crontab, {...SPEC, profile: 'team'})).toEqual({left: 0, removed: [], text: crontab})
  })

  it('leaves a marker whose next line is not the guard entry, and the line after it', () => {
    const [marker, entry] = cronLines(SPEC) as [string, string]
    for (const next of ['17 3 * * * /usr/local/bin/backup', entry.replace('--profile default', '--profile team'), '']) {
      const crontab = `MAILTO=ops@example.com\n${marker}\n${next}\n`
      expect(withoutCronGuard(crontab, SPEC)).toEqual({left: 1, removed: [], text: crontab})
    }
  })

  it('names the same units for the same directory and profile, and others for another profile', () => {
    const units = Object.keys(systemdUnits(SPEC, null))
    expect(units).toEqual(Object.keys(systemdUnits({...SPEC, everyMs: 3_600_000}, null)))
    expect(units).not.toEqual(Object.keys(systemdUnits({...SPEC, profile: 'team'}, null)))
    expect(units[0]).toMatch(/^targon-guard-[0-9a-f]{12}\.service$/)
  })

  it('names the user of a system service, and none in a user unit', () => {
    const service = (user: string | null) => Object.values(systemdUnits(SPEC, user))[0] as string
    expect(service('alice')).toMatch(/^\[Service\]\nType=oneshot\nUser=alice\n/m)
    expect(service(null)).not.toContain('User=')
  })
})

describe('guard coverage', () => {
  it('is unknown, with a warning, when the passes file cannot be read: never a failure of up or status', () => {
    const configDir = mkdtempSync(join(tmpdir(), 'targon-coverage-'))
    try {
      // A directory where the passes file belongs: reading it fails (EISDIR), as a damaged file would.
      mkdirSync(join(configDir, 'guard', 'default.runs'), {recursive: true})
      const warnings: string[] = []
      const coverage = guardCoverage(configDir, 'default', (message) => warnings.push(message))
      expect(coverage).toEqual({every_seconds: null, kind: 'unknown', last_exit_code: null, last_run_at: null})
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/^whether a guard covers this config directory is unknown: /)
      expect(coverageLine(coverage, 0)).toBe('Guard: unknown (it could not be read; see the warning)')
    } finally {
      rmSync(configDir, {force: true, recursive: true})
    }
  })

  it('is unknown, with a warning, when crontab -l fails', () => {
    const configDir = mkdtempSync(join(tmpdir(), 'targon-coverage-'))
    const bin = join(configDir, 'bin')
    const path = process.env.PATH
    try {
      mkdirSync(bin)
      writeFileSync(join(bin, 'crontab'), '#!/bin/sh\necho "crontab: you are not allowed to use this program" >&2\nexit 1\n')
      chmodSync(join(bin, 'crontab'), 0o755)
      process.env.PATH = `${bin}${delimiter}${path}`
      const warnings: string[] = []
      expect(guardCoverage(configDir, 'default', (message) => warnings.push(message)).kind).toBe('unknown')
      expect(warnings.join('\n')).toContain('crontab -l failed: crontab: you are not allowed to use this program')
    } finally {
      process.env.PATH = path
      rmSync(configDir, {force: true, recursive: true})
    }
  })
})

describe('guard problems', () => {
  const NOW = Date.parse('2026-12-01T12:00:00Z')
  const MINUTE = 60_000
  const GUARD: InstalledGuard = cronGuards(cronLines(SPEC).join('\n'))[0] as InstalledGuard
  const pass = (minutesAgo: number, skipped = false): GuardPass => ({
    at: new Date(NOW - minutesAgo * MINUTE).toISOString(),
    deleted: 0,
    duration_ms: 1000,
    exit_code: 0,
    skipped,
    still_billing: 0,
  })
  const problems = (passes: GuardPass[], installedMinutesAgo: number | null) =>
    guardProblems({
      configDir: SPEC.configDir,
      exists: () => true,
      guards: [GUARD],
      installedAt: installedMinutesAgo === null ? null : NOW - installedMinutesAgo * MINUTE,
      log: '/x/guard/default.log',
      now: NOW,
      passes,
    })

  it('names a guard that never ran once two periods (and a minute) passed since install, with the fix', () => {
    expect(problems([], 11)).toEqual([])
    expect(problems([], null)).toEqual([])
    const [never] = problems([], 12)
    expect(never).toMatch(/^no sweep has run since the guard was installed 12m ago, with one due every 5m: is cron or the timer running/)
  })

  it('names sweeps that all skipped on a stuck lock for two periods, not a skip now and then', () => {
    expect(problems([pass(20), pass(15, true), pass(10), pass(5, true)], 60)).toEqual([])
    expect(problems([pass(9), pass(5, true), pass(0, true)], 60)).toEqual([])
    const [stuck] = problems([pass(30), pass(25, true), pass(20, true), pass(15, true), pass(10, true), pass(5, true), pass(0, true)], 60)
    expect(stuck).toMatch(/^every sweep for 30m was skipped because another sweep holds the sweep lock: one is stuck/)
    expect(stuck).toContain(`end the process whose pid is in ${SPEC.configDir}/locks/sweep-*.lock`)
    // No real pass ever: counted from the install.
    expect(problems([pass(10, true), pass(5, true), pass(0, true)], 15)[0]).toMatch(/^every sweep for 15m was skipped/)
  })

  it('still names a schedule that stopped, and a failed last sweep', () => {
    expect(problems([pass(12)], 60)[0]).toMatch(/^no sweep ran for 12m, with one due every 5m/)
    expect(problems([{...pass(1), exit_code: 11}], 60)).toEqual(['the last sweep exited 11: see /x/guard/default.log'])
  })
})
