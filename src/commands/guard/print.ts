import {Flags} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {usageError} from '../../lib/core/errors.js'
import {prose} from '../../lib/core/output.js'
import {DEFAULT_EVERY_MS, EVERY_FLAG, KIND_FLAGS, TEAM_FLAG, kindOf} from '../../lib/cli/guard-flags.js'
import {
  checkEvery,
  checkSelection,
  cronLines,
  localSpec,
  registerTeamGuardKey,
  systemdUnits,
  unitUser,
  writeUnits,
} from '../../lib/workflows/guard/index.js'

export default class GuardPrint extends BaseCommand<typeof GuardPrint, 'guard print'> {
  static summary = 'Print the crontab lines or systemd units that guard install would write, without installing them.'

  static description = prose(`The same lines and units as targon guard install, for review or for a machine managed
by other means (configuration management, a crontab kept in git). With --systemd --dir D the service and timer are
written into D instead of printed. Nothing secret is in them. With --team, the team guard's key is registered with the
org as guard install --team registers it, so that the VMs made from now on carry it and the printed sweep can reach
them.`)

  static examples = [
    {command: '<%= config.bin %> guard print --cron', description: 'The crontab lines'},
    {command: '<%= config.bin %> guard print --systemd --dir ./units', description: 'The service and timer, written to ./units'},
  ]

  static flags = {
    ...KIND_FLAGS,
    dir: Flags.string({summary: 'With --systemd: write the unit files into this directory.'}),
    every: EVERY_FLAG,
    team: TEAM_FLAG,
  }

  public async run(): Promise<CommandResult<'guard print'>> {
    const kind = kindOf(this.flags)
    if (this.flags.dir !== undefined && kind !== 'systemd') throw usageError('--dir writes unit files', 'use it with --systemd')
    const local = await localSpec(this.ctx.settings, checkEvery(this.flags.every ?? DEFAULT_EVERY_MS))
    const {team} = this.flags
    const {guardKey, spec} = await this.withApi(async (client) => {
      const org = await this.ctx.org(client)
      const owner = team ? null : await checkSelection(client, this.ctx, org, local.profile)
      return {
        guardKey: team ? await registerTeamGuardKey(client, local.configDir, org, this.ctx.clock) : null,
        spec: {...local, org, owner, team},
      }
    })
    if (guardKey)
      this.info(`team guard key ${guardKey.name} registered with org ${spec.org}: every up from now on adds it to the VMs it makes`)
    if (kind === 'cron') {
      const text = `${cronLines(spec).join('\n')}\n`
      if (!this.jsonEnabled()) process.stdout.write(text)
      return {files: null, guard_key: guardKey, kind, text}
    }

    const units = systemdUnits(spec, unitUser(spec.configDir))
    const text = Object.entries(units)
      .map(([name, unit]) => `# ${name}\n${unit}`)
      .join('\n')
    const files = this.flags.dir === undefined ? null : writeUnits(this.flags.dir, units)
    if (!this.jsonEnabled()) {
      if (files) this.info(`written: ${files.join(', ')}`)
      else process.stdout.write(text)
    }

    return {files, guard_key: guardKey, kind, text}
  }
}
