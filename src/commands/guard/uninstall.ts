import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {entryOf} from '../../lib/workflows/guard/entries.js'
import {limitsLeftUnguarded, removeGuard} from '../../lib/workflows/guard/remove.js'
import {LocalState} from '../../lib/adapters/state/local-state.js'

export default class GuardUninstall extends BaseCommand<typeof GuardUninstall, 'guard uninstall'> {
  static summary = 'Remove the guard of this config directory and profile: exactly what guard install wrote.'

  static description =
    'Removes the crontab line (and its marker; a marker whose next line is not the entry is left, with a warning) and the systemd service and timer that targon guard install wrote for this config directory and profile, nothing else of the crontab or the unit directory. The log and the recorded runs stay. A warning names the limits recorded in this directory (TTLs, budgets, idle limits, --down jobs) that no guard enforces any more; for a team guard, another says that its key stays registered with the org, so every up still adds it to the VMs it makes.'

  static examples = [{command: '<%= config.bin %> guard uninstall', description: 'Stop sweeping this directory on a schedule'}]

  public async run(): Promise<CommandResult<'guard uninstall'>> {
    const guard = {configDir: this.ctx.settings.dir, profile: (await this.ctx.settings.profile()).name}
    this.acting.profile = guard.profile
    const removed = removeGuard(guard, this.ctx.warn)
    this.info(
      removed.length === 0
        ? `no guard for ${guard.configDir} (profile ${guard.profile}) to remove`
        : `removed: ${removed.map((each) => each.kind).join(', ')}`,
    )
    const left = removed.length === 0 ? null : limitsLeftUnguarded(new LocalState(guard.configDir).listAllVms().records)
    if (left) this.addWarning(`no guard enforces ${left} any more: run targon sweep yourself, or targon guard install again`)
    const team = removed.find((each) => each.marker.team)
    if (team)
      this.addWarning(
        `the team guard's key stays registered with org ${team.marker.org}: every up in the org still adds it to the VMs it makes, which no team guard sweeps from here any more; install the team guard again (here or on another always-on machine)`,
      )
    return {removed: removed.map(entryOf)}
  }
}
