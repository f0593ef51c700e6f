import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {formatDuration} from '../../lib/core/input.js'
import {prose} from '../../lib/core/output.js'
import {
  type CoveredVm,
  entryOf,
  guardProblems,
  type InstalledGuard,
  installedGuards,
  logFile,
  nextPass,
  readInstalledAt,
  readPasses,
  sameGuard,
  type VmCoverage,
  vmCoverage,
} from '../../lib/workflows/guard/index.js'
import {asTargonError} from '../../lib/core/errors.js'
import {countOf} from '../../lib/core/output.js'

/** Runs shown. */
const SHOWN_PASSES = 5

export default class GuardStatus extends BaseCommand<typeof GuardStatus, 'guard status'> {
  static summary = 'Show the guard of this config directory and profile: schedule, last runs, next run, problems.'

  static description = prose(`Reads this user's crontab and systemd units for the guard that targon guard install wrote
for this config directory and profile, and the runs its sweeps recorded. A problem is named when the scheduled node
or CLI no longer exists (after an upgrade or a move: install again), when the last sweep failed, when no sweep ran
for more than two periods or none ever ran since install two periods ago (is cron or the timer running?), and when
every sweep for two periods was skipped because one is stuck holding the sweep lock.

It also lists which of the org's VMs each guard covers, and which none covers: this directory's guard covers the VMs
recorded here (of its owner, when it has one); a team guard (guard install --team, on this machine or another) covers
the VMs that carry its key, as each VM's full read says. VMs made before a team guard's key existed do not carry it.
That part reads the API; without an API key or org here, or when the API cannot be read, it is left out, with a
warning.`)

  static examples = [{command: '<%= config.bin %> guard status', description: 'Is this directory guarded, and is the guard running?'}]

  public async run(): Promise<CommandResult<'guard status'>> {
    const dir = this.ctx.settings.dir
    const profile = (await this.ctx.settings.profile()).name
    this.acting.profile = profile
    const guards = installedGuards().filter((guard) => sameGuard(guard.marker, {configDir: dir, profile}))
    const passes = readPasses(dir, profile)
    const now = this.ctx.clock.now()
    const every = guards.find((guard) => guard.everyMs !== null)?.everyMs ?? null
    const log = logFile(dir, profile)
    const problems = guardProblems({configDir: dir, guards, installedAt: readInstalledAt(dir, profile), log, now, passes})
    const result = {
      config_dir: dir,
      guards: guards.map(entryOf),
      last_runs: passes.slice(-SHOWN_PASSES),
      log,
      next_run_at: every === null ? null : new Date(nextPass(every, now)).toISOString(),
      problems,
      profile,
      coverage: await this.coverage(dir, guards),
    }
    if (!this.jsonEnabled()) this.render(result)
    return result
  }

  /** Which VMs each guard covers; null, with one warning, when the API cannot be read (no key or org here, or it failed). */
  private async coverage(configDir: string, guards: InstalledGuard[]): Promise<VmCoverage | null> {
    try {
      return await this.withApi(async (client) => vmCoverage(client, this.ctx, {configDir, guards, org: await this.ctx.org(client)}))
    } catch (error) {
      this.addWarning(`which VMs the guards cover is left out: ${asTargonError(error).message}`)
      return null
    }
  }

  private render(result: CommandResult<'guard status'>): void {
    if (result.guards.length === 0) this.log(`No guard for ${result.config_dir} (profile ${result.profile}): targon guard install --cron`)
    for (const guard of result.guards)
      this.log(
        `${guard.kind}: targon sweep${guard.team ? ' --team' : ''} every ${guard.every_seconds === null ? '?' : formatDuration(guard.every_seconds * 1000)} for org ${guard.org}${guard.team ? ", every owner's VMs (team guard)" : guard.owner ? `, owner ${guard.owner}` : ''}`,
      )
    if (result.next_run_at) this.log(`Next run: ${result.next_run_at.slice(0, 16)}Z`)
    for (const run of result.last_runs)
      this.log(
        `${run.at.slice(0, 19)}Z  exit ${run.exit_code}  ${run.skipped ? 'skipped (another sweep ran)' : `deleted ${run.deleted}, still billing ${run.still_billing}`}`,
      )
    if (result.last_runs.length === 0 && result.guards.length > 0) this.log('No run recorded yet.')
    this.log(`Log: ${result.log}`)
    if (result.coverage) this.renderCoverage(result.coverage)
    for (const problem of result.problems) this.addWarning(problem)
  }

  private renderCoverage(coverage: VmCoverage): void {
    this.log(`Coverage in org ${coverage.org}:`)
    const line = (what: string, vms: CoveredVm[]) =>
      this.log(`  ${what}: ${countOf(vms.length, 'VM')}${vms.length === 0 ? '' : ` (${vms.map((vm) => vm.name ?? vm.uid).join(', ')})`}`)
    for (const guard of coverage.guards)
      line(
        guard.kind === 'local'
          ? `this directory's guard${guard.owner ? ` (owner ${guard.owner})` : ''}`
          : `team guard ${guard.key?.name ?? '?'}${guard.here ? ' (this directory)' : ''}`,
        guard.vms,
      )
    if (coverage.guards.length === 0) this.log('  no guard of this directory, and no team guard key in the org')
    line('not covered', coverage.not_covered)
    if (coverage.unknown.length > 0) line('unknown (keys not read)', coverage.unknown)
  }
}
