/**
 * The guards of this directory and profile as the JSON contract shows them, and the one place that reads them all
 * (the crontab, when cron is installed, and the unit directory).
 */
import type {GuardEntry} from './schema.js'
import {dirname} from 'node:path'

import {type GuardKind, type GuardSpec} from './guard.js'
import {type InstalledGuard, SYSTEM_UNIT_DIR, cronGuards, readCrontab, sameGuard, systemdGuards, unitDir, userUnitDir} from './installed.js'

export function entryOf(guard: InstalledGuard): GuardEntry {
  return {
    cli: guard.cli,
    config_dir: guard.marker.configDir,
    every_seconds: guard.everyMs === null ? null : guard.everyMs / 1000,
    files: guard.files,
    kind: guard.kind,
    node: guard.node,
    org: guard.marker.org,
    owner: guard.marker.owner,
    profile: guard.marker.profile,
    team: guard.marker.team,
  }
}

export function specEntry(spec: GuardSpec, kind: GuardEntry['kind'], files: string[] | null): GuardEntry {
  return entryOf({cli: spec.cli, everyMs: spec.everyMs, files, kind, marker: spec, node: spec.node})
}

/** Every guard of this user on this machine: the crontab's (none when cron is not installed) and the units'. */
export function installedGuards(): InstalledGuard[] {
  return [...cronGuards(readCrontab() ?? ''), ...systemdGuards(unitDir())]
}

/**
 * Every guard on this machine that this user can read: this user's crontab, the system units and this user's units.
 * Other users' crontabs cannot be read; their guards are not seen.
 */
export function machineGuards(): InstalledGuard[] {
  return [...cronGuards(readCrontab() ?? ''), ...systemdGuards(SYSTEM_UNIT_DIR), ...systemdGuards(userUnitDir())]
}

/**
 * A guard that a new one of this kind would double: one for the same org and owner (for a team guard: the org's
 * other team guard), or for the same directory and profile, of any kind and wherever it is, except the entry that
 * installing this kind again replaces.
 */
export function conflictingGuard(spec: GuardSpec, kind: GuardKind): InstalledGuard | undefined {
  return machineGuards().find((guard) => {
    const replaced = sameGuard(guard.marker, spec) && guard.kind === kind && (kind === 'cron' || isIn(guard, unitDir()))
    const sameScope = guard.marker.org === spec.org && guard.marker.team === spec.team && (spec.team || guard.marker.owner === spec.owner)
    return !replaced && (sameScope || sameGuard(guard.marker, spec))
  })
}

/** The command that removes a guard, as whoever installed it. */
export function uninstallCommand(guard: InstalledGuard): string {
  const asRoot = guard.kind === 'systemd' && isIn(guard, SYSTEM_UNIT_DIR) && process.getuid?.() !== 0
  return `${asRoot ? 'sudo ' : ''}TARGON_CONFIG_DIR=${guard.marker.configDir} targon guard uninstall --profile ${guard.marker.profile}`
}

function isIn(guard: InstalledGuard, dir: string): boolean {
  return guard.files?.[0] !== undefined && dirname(guard.files[0]) === dir
}
