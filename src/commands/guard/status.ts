import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/cli/contract.js'
import {formatDuration} from '../../lib/core/input.js'
import {prose} from '../../lib/core/output.js'
import {entryOf, installedGuards} from '../../lib/workflows/guard/entries.js'
import {logFile, nextRun} from '../../lib/workflows/guard/guard.js'
import {sameGuard} from '../../lib/workflows/guard/installed.js'
import {guardProblems} from '../../lib/workflows/guard/problems.js'
import {readInstalledAt, readRuns} from '../../lib/workflows/guard/runs.js'

/** Runs shown. */
const SHOWN_RUNS = 5

export default class GuardStatus extends BaseCommand<typeof GuardStatus, 'guard status'> {
  static summary = 'Show the guard of this config directory and profile: schedule, last runs, next run, problems.'

  static description = prose(`Reads this user's crontab and systemd units for the guard that targon guard install wrote
for this config directory and profile, and the runs its sweeps recorded. A problem is named when the scheduled node
or CLI no longer exists (after an upgrade or a move: install again), when the last sweep failed, when no sweep ran
for more than two periods or none ever ran since install two periods ago (is cron or the timer running?), and when
every sweep for two periods was skipped because one is stuck holding the sweep lock. It reads no API.`)

  static examples = [{command: '<%= config.bin %> guard status', description: 'Is this directory guarded, and is the guard running?'}]

  public async run(): Promise<CommandResult<'guard status'>> {
    const dir = this.ctx.settings.dir
    const profile = (await this.ctx.settings.profile()).name
    this.acting.profile = profile
    const guards = installedGuards().filter((guard) => sameGuard(guard.marker, {configDir: dir, profile}))
    const runs = readRuns(dir, profile)
    const now = this.ctx.clock.now()
    const every = guards.find((guard) => guard.everyMs !== null)?.everyMs ?? null
    const log = logFile(dir, profile)
    const problems = guardProblems({configDir: dir, guards, installedAt: readInstalledAt(dir, profile), log, now, runs})
    const result = {
      config_dir: dir,
      guards: guards.map(entryOf),
      last_runs: runs.slice(-SHOWN_RUNS),
      log,
      next_run_at: every === null ? null : new Date(nextRun(every, now)).toISOString(),
      problems,
      profile,
    }
    if (!this.jsonEnabled()) this.render(result)
    return result
  }

  private render(result: CommandResult<'guard status'>): void {
    if (result.guards.length === 0) this.log(`No guard for ${result.config_dir} (profile ${result.profile}): targon guard install --cron`)
    for (const guard of result.guards)
      this.log(
        `${guard.kind}: targon sweep every ${guard.every_seconds === null ? '?' : formatDuration(guard.every_seconds * 1000)} for org ${guard.org}${guard.owner ? `, owner ${guard.owner}` : ''}`,
      )
    if (result.next_run_at) this.log(`Next run: ${result.next_run_at.slice(0, 16)}Z`)
    for (const run of result.last_runs)
      this.log(
        `${run.at.slice(0, 19)}Z  exit ${run.exit_code}  ${run.skipped ? 'skipped (another sweep ran)' : `deleted ${run.deleted}, still billing ${run.still_billing}`}`,
      )
    if (result.last_runs.length === 0 && result.guards.length > 0) this.log('No run recorded yet.')
    this.log(`Log: ${result.log}`)
    for (const problem of result.problems) this.addWarning(problem)
  }
}
