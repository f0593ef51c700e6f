import {existsSync} from 'node:fs'

import {BaseCommand} from '../../lib/cli/base-command.js'
import type {CommandResult} from '../../lib/contract.js'
import {formatDuration} from '../../lib/core/input.js'
import {prose} from '../../lib/core/output.js'
import {entryOf, installedGuards} from '../../lib/guard/entries.js'
import {logFile, nextRun} from '../../lib/guard/guard.js'
import {sameGuard} from '../../lib/guard/installed.js'
import {readRuns} from '../../lib/guard/runs.js'
import {activeProfile, configDir} from '../../lib/settings/settings.js'

/** Runs shown. */
const SHOWN_RUNS = 5

export default class GuardStatus extends BaseCommand<typeof GuardStatus, 'guard status'> {
  static summary = 'Show the guard of this config directory and profile: schedule, last runs, next run, problems.'

  static description = prose(`Reads this user's crontab and systemd units for the guard that targon guard install wrote
for this config directory and profile, and the runs its sweeps recorded. A problem is named when the scheduled node
or CLI no longer exists (after an upgrade or a move: install again), when the last sweep failed, or when no sweep
ran for more than two periods (is cron or the timer running?). It reads no API.`)

  static examples = [{command: '<%= config.bin %> guard status', description: 'Is this directory guarded, and is the guard running?'}]

  public async run(): Promise<CommandResult<'guard status'>> {
    const dir = configDir()
    const profile = (await activeProfile()).name
    this.acting.profile = profile
    const guards = installedGuards().filter((guard) => sameGuard(guard.marker, {configDir: dir, profile}))
    const runs = readRuns(dir, profile)
    const now = this.clock.now()
    const problems: string[] = []
    for (const guard of guards) {
      for (const [what, path] of [
        ['node', guard.node],
        ['CLI', guard.cli],
      ] as const)
        if (path === null || !existsSync(path))
          problems.push(
            `the ${guard.kind} guard runs a ${what} that is not there (${path ?? 'unreadable entry'}): run targon guard install again`,
          )
    }

    const last = runs.at(-1)
    const every = guards.find((guard) => guard.everyMs !== null)?.everyMs ?? null
    if (last && last.exit_code !== 0 && last.exit_code !== 14)
      problems.push(`the last sweep exited ${last.exit_code}: see ${logFile(dir, profile)}`)
    if (every !== null && guards.length > 0) {
      const since = last ? Date.parse(last.at) : null
      if (since !== null && now - since > 2 * every + 60_000)
        problems.push(
          `no sweep ran for ${formatDuration(now - since)}, with one due every ${formatDuration(every)}: is cron or the timer running?`,
        )
    }

    const result = {
      config_dir: dir,
      guards: guards.map(entryOf),
      last_runs: runs.slice(-SHOWN_RUNS),
      log: logFile(dir, profile),
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
