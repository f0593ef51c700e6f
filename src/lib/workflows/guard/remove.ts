/**
 * Removing a guard, exactly what install wrote: its crontab marker with the entry after it, and its service and
 * timer. `guard uninstall` uses it, and `guard install` before it writes the guard again.
 */
import {unitName, type GuardMarker} from './guard.js'
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
