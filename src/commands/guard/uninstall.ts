import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/contract.js'
import {entryOf} from '../../lib/guard/entries.js'
import {
  cronGuards,
  readCrontab,
  removeFiles,
  sameGuard,
  systemctl,
  systemdGuards,
  unitDir,
  withoutCronGuard,
  writeCrontab,
} from '../../lib/guard/installed.js'
import {unitName} from '../../lib/guard/guard.js'

export default class GuardUninstall extends BaseCommand<typeof GuardUninstall, 'guard uninstall'> {
  static summary = 'Remove the guard of this config directory and profile: exactly what guard install wrote.'

  static description =
    'Removes the crontab line (and its marker) and the systemd service and timer that targon guard install wrote for this config directory and profile, nothing else of the crontab or the unit directory. The log and the recorded runs stay.'

  static examples = [{command: '<%= config.bin %> guard uninstall', description: 'Stop sweeping this directory on a schedule'}]

  public async run(): Promise<CommandResult<'guard uninstall'>> {
    const guard = {configDir: this.ctx.settings.dir, profile: (await this.ctx.settings.profile()).name}
    this.acting.profile = guard.profile
    const removed = []
    const crontab = readCrontab()
    if (crontab !== null) {
      const cron = cronGuards(crontab).filter((each) => sameGuard(each.marker, guard))
      if (cron.length > 0) {
        writeCrontab(withoutCronGuard(crontab, guard))
        removed.push(...cron)
      }
    }

    for (const units of systemdGuards(unitDir()).filter((each) => sameGuard(each.marker, guard))) {
      const stopped = systemctl(['disable', '--now', `${unitName(guard)}.timer`])
      if (!stopped.ok) this.addWarning(`systemctl could not disable the timer (${stopped.problem}); its files are removed all the same`)
      removeFiles(units.files ?? [])
      systemctl(['daemon-reload'])
      removed.push(units)
    }

    this.info(
      removed.length === 0
        ? `no guard for ${guard.configDir} (profile ${guard.profile}) to remove`
        : `removed: ${removed.map((each) => each.kind).join(', ')}`,
    )
    return {removed: removed.map(entryOf)}
  }
}
