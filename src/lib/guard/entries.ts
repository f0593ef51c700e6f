/**
 * The guards of this directory and profile as the JSON contract shows them, and the one place that reads them all
 * (the crontab, when cron is installed, and the unit directory).
 */
import type {GuardEntry} from './schema.js'
import {type GuardSpec} from './guard.js'
import {type InstalledGuard, cronGuards, readCrontab, systemdGuards, unitDir} from './installed.js'

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
  }
}

export function specEntry(spec: GuardSpec, kind: GuardEntry['kind'], files: string[] | null): GuardEntry {
  return entryOf({cli: spec.cli, everyMs: spec.everyMs, files, kind, marker: spec, node: spec.node})
}

/** Every guard of this user on this machine: the crontab's (none when cron is not installed) and the units'. */
export function installedGuards(): InstalledGuard[] {
  return [...cronGuards(readCrontab() ?? ''), ...systemdGuards(unitDir())]
}
