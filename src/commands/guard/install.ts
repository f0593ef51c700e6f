import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {TargonError} from '../../lib/core/errors.js'
import {prose} from '../../lib/core/output.js'
import {DEFAULT_EVERY_MS, EVERY_FLAG, KIND_FLAGS, TEAM_FLAG, kindOf} from '../../lib/cli/guard-flags.js'
import {
  checkEvery,
  checkSelection,
  conflictingGuard,
  cronLines,
  cronMissing,
  ensureGuardDir,
  environmentOnlySecrets,
  type GuardKey,
  type GuardKind,
  type GuardSpec,
  localSpec,
  logFile,
  readCrontab,
  recordInstall,
  refuseEnvironmentOnly,
  registerTeamGuardKey,
  removeGuard,
  specEntry,
  systemctl,
  systemdUnits,
  uninstallCommand,
  unitDir,
  unitName,
  unitUser,
  writeCrontab,
  writeUnits,
} from '../../lib/workflows/guard/index.js'

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
removes it. The sweeps' output goes to guard/<profile>.log in the config directory, rotated past 1 MiB.

With --team, the guard is the org's team guard, for an always-on machine: it runs targon sweep --team, which
enforces every owner's limits as each VM carries them, so it needs no owner and takes a selection of several. It
registers a key of its own with the org once (keys/guard_ed25519 in this directory); every later up in the org, from
any directory, adds that key to the VMs it makes, so that this machine can log in to all of them: trust it as you
trust the owners' laptops. VMs made before the key existed do not carry it: the sweep reports them and leaves them
alone. One team guard per org on a machine.`)

  static examples = [
    {command: '<%= config.bin %> guard install --cron', description: 'Every 5 minutes, from this user crontab'},
    {command: 'sudo <%= config.bin %> guard install --systemd --every 10m', description: 'A system timer, every 10 minutes'},
    {command: '<%= config.bin %> guard install --team --cron', description: "The org's team guard, on an always-on machine"},
  ]

  static flags = {...KIND_FLAGS, every: EVERY_FLAG, team: TEAM_FLAG}

  public async run(): Promise<CommandResult<'guard install'>> {
    const kind = kindOf(this.flags)
    const local = await localSpec(this.ctx.settings, checkEvery(this.flags.every ?? DEFAULT_EVERY_MS))
    await refuseEnvironmentOnly(this.ctx.settings, local.configDir, local.profile, this.flags.org)
    const {team} = this.flags
    const {guardKey, spec} = await this.withApi(async (client): Promise<{guardKey: GuardKey | null; spec: GuardSpec}> => {
      const org = await this.ctx.org(client)
      // The team guard sweeps every owner by the limits each VM carries: no owner, no selection to refuse.
      const scoped: GuardSpec = {...local, org, owner: team ? null : await checkSelection(client, this.ctx, org, local.profile), team}
      refuseConflict(scoped, kind)
      if (kind === 'cron' && readCrontab() === null) throw cronMissing()
      // After every refusal: a guard that is not installed registers nothing.
      return {guardKey: team ? await registerTeamGuardKey(client, scoped.configDir, org, this.ctx.clock) : null, spec: scoped}
    })
    for (const warning of await environmentOnlySecrets(this.ctx.settings, spec.configDir, spec.profile)) this.addWarning(warning)

    ensureGuardDir(spec.configDir)
    const replaced = removeGuard(spec, this.ctx.warn).length > 0
    const result = {...(kind === 'cron' ? this.installCron(spec, replaced) : this.installSystemd(spec, replaced)), guard_key: guardKey}
    recordInstall(spec.configDir, spec.profile, this.ctx.clock.now())
    this.info(
      `${result.replaced ? 'replaced' : 'installed'}: targon sweep${team ? ' --team' : ''} every ${spec.everyMs / 60_000} min (${kind}) for ${spec.configDir} (profile ${spec.profile}); output in ${result.log}`,
    )
    if (guardKey)
      this.info(
        `team guard key ${guardKey.name} registered with org ${spec.org}: every up from now on adds it to the VMs it makes; VMs made before do not carry it`,
      )
    this.info('Check it with: targon guard status')
    return result
  }

  private installCron(spec: GuardSpec, replaced: boolean): Omit<CommandResult<'guard install'>, 'guard_key'> {
    const crontab = readCrontab()
    if (crontab === null) throw cronMissing()
    const rest = crontab.replace(/\n*$/, '')
    writeCrontab(`${rest === '' ? '' : `${rest}\n`}${cronLines(spec).join('\n')}\n`)
    return {enabled: null, installed: specEntry(spec, 'cron', null), log: logFile(spec.configDir, spec.profile), replaced}
  }

  private installSystemd(spec: GuardSpec, replaced: boolean): Omit<CommandResult<'guard install'>, 'guard_key'> {
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

/** Refuses (exit 3) a guard that would double another (see conflictingGuard), with the command that removes that one. */
function refuseConflict(spec: GuardSpec, kind: GuardKind): void {
  const other = conflictingGuard(spec, kind)
  if (!other) return
  const scope = other.marker.team
    ? `the team guard of org ${other.marker.org}`
    : `a guard for org ${other.marker.org}${other.marker.owner ? ` and owner ${other.marker.owner}` : ''}`
  throw new TargonError('CONFIG', `${scope} already runs from ${other.marker.configDir} (profile ${other.marker.profile}, ${other.kind})`, {
    hint: `remove it first: ${uninstallCommand(other)}`,
  })
}
