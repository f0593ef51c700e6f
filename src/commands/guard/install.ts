import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {TargonError} from '../../lib/core/errors.js'
import {prose} from '../../lib/core/output.js'
import {DEFAULT_EVERY_MS, EVERY_FLAG, KIND_FLAGS, kindOf} from '../../lib/cli/guard-flags.js'
import {type GuardSpec, checkEvery, cronLines, logFile, systemdUnits, unitName} from '../../lib/workflows/guard/guard.js'
import {cronMissing, readCrontab, systemctl, unitDir, unitUser, writeCrontab, writeUnits} from '../../lib/workflows/guard/installed.js'
import {removeGuard} from '../../lib/workflows/guard/remove.js'
import {ensureGuardDir, recordInstall} from '../../lib/workflows/guard/runs.js'
import {checkSelection, environmentOnlySecrets, localSpec, refuseEnvironmentOnly} from '../../lib/workflows/guard/spec.js'
import {conflictingGuard, specEntry, uninstallCommand} from '../../lib/workflows/guard/entries.js'

export default class GuardInstall extends BaseCommand<typeof GuardInstall, 'guard install'> {
  static summary = 'Schedule targon sweep on this machine for this config directory and profile.'

  static description = prose(`Writes one crontab line for this user (--cron), or a systemd service and timer (--systemd:
system units as root, which run the sweep as the owner of the config directory, User=root for root's; user units
otherwise), that runs targon sweep every --every (default 5m) with absolute paths,
TARGON_CONFIG_DIR and --profile: cron and systemd give it no environment. Nothing secret is written: the sweep reads
the API key, the notify and heartbeat URLs from the config file at run time, so the key must be stored there (exit 3
otherwise, with the fix); an owner, an org or an API URL that only the environment gives is refused the same way
(targon config set api-url for another endpoint), and so is a selection the sweep would refuse (VMs of several owners
and no owner set). So is a node or CLI that another user could change (theirs, or writable by others, or in a folder
that is, up to /): cron would run their code as you. Installing again replaces the guard of this
directory and profile of the same kind; any other guard this user can see on the machine (this user's crontab, the
system units, this user's units) for the same org and owner, or for this directory, is refused, with the command that
removes it. The sweeps' output goes to guard/<profile>.log in the config directory, rotated past 1 MiB.`)

  static examples = [
    {command: '<%= config.bin %> guard install --cron', description: 'Every 5 minutes, from this user crontab'},
    {command: 'sudo <%= config.bin %> guard install --systemd --every 10m', description: 'A system timer, every 10 minutes'},
  ]

  static flags = {...KIND_FLAGS, every: EVERY_FLAG}

  public async run(): Promise<CommandResult<'guard install'>> {
    const kind = kindOf(this.flags)
    const local = await localSpec(this.ctx.settings, checkEvery(this.flags.every ?? DEFAULT_EVERY_MS))
    await refuseEnvironmentOnly(this.ctx.settings, local.configDir, local.profile, this.flags.org)
    const spec: GuardSpec = await this.withApi(async (client) => {
      const org = await this.resolveOrg(client)
      return {...local, org, owner: await checkSelection(client, this.ctx, org, local.profile)}
    })
    for (const warning of await environmentOnlySecrets(this.ctx.settings, spec.configDir, spec.profile)) this.addWarning(warning)
    const other = conflictingGuard(spec, kind)
    if (other)
      throw new TargonError(
        'CONFIG',
        `a guard for org ${other.marker.org}${other.marker.owner ? ` and owner ${other.marker.owner}` : ''} already runs from ${other.marker.configDir} (profile ${other.marker.profile}, ${other.kind})`,
        {hint: `remove it first: ${uninstallCommand(other)}`},
      )

    if (kind === 'cron' && readCrontab() === null) throw cronMissing()
    ensureGuardDir(spec.configDir)
    const replaced = removeGuard(spec, this.ctx.warn).length > 0
    const result = kind === 'cron' ? this.installCron(spec, replaced) : this.installSystemd(spec, replaced)
    recordInstall(spec.configDir, spec.profile, this.ctx.clock.now())
    this.info(
      `${result.replaced ? 'replaced' : 'installed'}: targon sweep every ${spec.everyMs / 60_000} min (${kind}) for ${spec.configDir} (profile ${spec.profile}); output in ${result.log}`,
    )
    this.info('Check it with: targon guard status')
    return result
  }

  private installCron(spec: GuardSpec, replaced: boolean): CommandResult<'guard install'> {
    const crontab = readCrontab()
    if (crontab === null) throw cronMissing()
    const rest = crontab.replace(/\n*$/, '')
    writeCrontab(`${rest === '' ? '' : `${rest}\n`}${cronLines(spec).join('\n')}\n`)
    return {enabled: null, installed: specEntry(spec, 'cron', null), log: logFile(spec.configDir, spec.profile), replaced}
  }

  private installSystemd(spec: GuardSpec, replaced: boolean): CommandResult<'guard install'> {
    const dir = unitDir()
    const files = writeUnits(dir, systemdUnits(spec, unitUser(spec.configDir)))
    const timer = `${unitName(spec)}.timer`
    const reload = systemctl(['daemon-reload'])
    const enable = reload.ok ? systemctl(['enable', '--now', timer]) : reload
    const user = process.getuid?.() !== 0
    if (!enable.ok)
      this.addWarning(
        `the units are written, but systemctl could not enable the timer (${enable.problem}): run systemctl${user ? ' --user' : ''} daemon-reload && systemctl${user ? ' --user' : ''} enable --now ${timer}`,
      )
    if (user) this.addWarning('user units run only while you are logged in, unless linger is on for your user: loginctl enable-linger')
    return {enabled: enable.ok, installed: specEntry(spec, 'systemd', files), log: logFile(spec.configDir, spec.profile), replaced}
  }
}
