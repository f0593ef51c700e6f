import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {entryOf, type GuardKey, limitsLeftUnguarded, removeGuard, retireTeamGuardKey} from '../../lib/workflows/guard/index.js'
import {asTargonError} from '../../lib/core/errors.js'

export default class GuardUninstall extends BaseCommand<typeof GuardUninstall, 'guard uninstall'> {
  static summary = 'Remove the guard of this config directory and profile: exactly what guard install wrote.'

  static description =
    "Removes the crontab line (and its marker; a marker whose next line is not the entry is left, with a warning) and the systemd service and timer that targon guard install wrote for this config directory and profile, nothing else of the crontab or the unit directory. The log and the recorded runs stay. A warning names the limits recorded in this directory (TTLs, budgets, idle limits, --down jobs) that no guard enforces any more; a team guard's key is removed from the org, so that no up adds it any more (the key files stay, so that installing the team guard again reaches the VMs that carry it)."

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
    const left = removed.length === 0 ? null : limitsLeftUnguarded(this.ctx.localState().listAllVms().records)
    if (left) this.addWarning(`no guard enforces ${left} any more: run targon sweep yourself, or targon guard install again`)
    const team = removed.find((each) => each.marker.team)
    const keyRemoved = team ? await this.retireKey(guard.configDir, team.marker.org) : null
    return {guard_key_removed: keyRemoved, removed: removed.map(entryOf)}
  }

  /** The team guard's key leaves the org; a failure to remove it is a warning, since the guard itself is gone. */
  private async retireKey(configDir: string, org: string): Promise<GuardKey | null> {
    try {
      const key = await this.withApi((client) => retireTeamGuardKey(client, configDir, org))
      if (key) this.info(`removed the team guard's key ${key.name} from org ${org}: no up adds it any more`)
      return key
    } catch (error) {
      this.addWarning(
        `the team guard's key could not be removed from org ${org} (${asTargonError(error).message}): every up in the org still adds it to the VMs it makes, which no team guard sweeps any more; remove it (its name starts with targon-guard-) in the Targon dashboard, or install the team guard again`,
      )
      return null
    }
  }
}
