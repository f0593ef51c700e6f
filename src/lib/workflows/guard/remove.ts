/**
 * Removing a guard, exactly what install wrote: its crontab marker with the entry after it, and its service and
 * timer. `guard uninstall` uses it, and `guard install` before it writes the guard again.
 */
import {unitName, type GuardMarker} from './guard.js'
import type {VmRecord} from '../../adapters/state/local-state.js'
import {countOf} from '../../core/output.js'
import {
  type InstalledGuard,
  readCrontab,
  removeFiles,
  sameGuard,
  systemctl,
  systemdGuards,
  unitDir,
  withoutCronGuard,
  writeCrontab,
} from './installed.js'

/** Removes the guard of this directory and profile, of both kinds; returns what it removed. */
export function removeGuard(guard: Pick<GuardMarker, 'configDir' | 'profile'>, warn: (message: string) => void): InstalledGuard[] {
  const removed: InstalledGuard[] = []
  const crontab = readCrontab()
  if (crontab !== null) {
    const cron = withoutCronGuard(crontab, guard)
    if (cron.left > 0)
      warn(
        `the crontab has a targon guard marker for ${guard.configDir} (profile ${guard.profile}) whose next line is not the guard's entry: both are left as they are; edit them with crontab -e`,
      )
    if (cron.removed.length > 0) {
      writeCrontab(cron.text)
      removed.push(...cron.removed)
    }
  }

  for (const units of systemdGuards(unitDir()).filter((each) => sameGuard(each.marker, guard))) {
    const stopped = systemctl(['disable', '--now', `${unitName(guard)}.timer`])
    if (!stopped.ok) warn(`systemctl could not disable the timer (${stopped.problem}); its files are removed all the same`)
    removeFiles(units.files ?? [])
    systemctl(['daemon-reload'])
    removed.push(units)
  }

  return removed
}

/**
 * The limits of the VM records in a config directory that a guard of it enforced, in words ("the TTLs of 2 VMs, the
 * budget of 1 VM and the idle limit of 1 VM recorded in /dir"); null when no record has one.
 */
export function limitsLeftUnguarded(records: VmRecord[]): string | null {
  const counts: [number, string][] = [
    [records.filter((record) => record.ttl_expires_at !== null).length, 'TTL'],
    [records.filter((record) => record.max_cost_usd !== null).length, 'budget'],
    [records.filter((record) => record.idle_limit_s !== null).length, 'idle limit'],
    [records.filter((record) => record.down_job !== null).length, 'run --down job'],
  ]
  const parts = counts.filter(([count]) => count > 0).map(([count, what]) => `the ${what} of ${countOf(count, 'VM')}`)
  if (parts.length === 0) return null
  return `${parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`} recorded here`
}
