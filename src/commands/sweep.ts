import {openLeave} from '../lib/workflows/dstack/leave.js'
import {join} from 'node:path'

import {Flags} from '@oclif/core'

import {MAX_MUTATIONS_IN_FLIGHT} from '../lib/adapters/targon/http.js'
import {storeLimit} from '../lib/workflows/job/job-store.js'
import {stillBillingText} from '../lib/cli/render/still-billing.js'
import {BaseCommand, EVENT_FLAGS, toTargonError} from '../lib/cli/base-command.js'
import {deletionResultLines, dstackOutOfSyncLines, endedJobsLines, followDeletions} from '../lib/cli/deletion-display.js'
import {durationFlag, hooksFlag, usdFlag} from '../lib/cli/flags.js'
import type {SweepResult} from '../lib/workflows/sweep/schema.js'
import {TargonError, isTargonError, usageError} from '../lib/core/errors.js'
import {formatDuration} from '../lib/core/input.js'
import {countOf, dash, printable, prose, usd} from '../lib/core/output.js'
import {hasGuardKey} from '../lib/adapters/ssh/project-key.js'
import {validateFleet} from '../lib/adapters/settings/table.js'
import {ownerScope} from '../lib/domain/fleet/owners.js'
import {ping} from '../lib/adapters/notify/heartbeat.js'
import {ensureConfigDir} from '../lib/adapters/state/trust.js'
import {ifFileLockFree} from '../lib/adapters/state/lock.js'
import {childPath} from '../lib/adapters/state/paths.js'
import {runSweep} from '../lib/workflows/sweep/sweep.js'
import {hooksInWords} from '../lib/domain/hooks/hook.js'
import {recordPass, rotateLog} from '../lib/workflows/guard/passes.js'
import {DEFAULT_PROFILE} from '../lib/adapters/settings/store.js'
import type {Warning} from '../lib/workflows/sweep/warnings.js'

/** The guard's warning window when the config sets none. */
const DEFAULT_GUARD_WARN_MS = 15 * 60_000

export default class Sweep extends BaseCommand<typeof Sweep, 'sweep'> {
  static summary = 'Enforce every limit once: delete VMs past their TTL, budget or idle limit, and check the runway.'

  static description = prose(`One pass of every policy over every fleet, for a schedule (targon guard install runs it):
it deletes what down --expired and down --idle would delete, with down's owner rules, and nothing else. A VM goes when
its --ttl ran out, its --max-cost budget is spent by the estimate (price x age), it is idle past its limit (its own
from up --idle, else --idle-limit; a busy VM or one whose clock cannot be read is kept, as with down --idle), or, with
--over-cost, its estimated cost exceeds that, or its run --down job (detached, or left by a run that stopped following)
has ended (a job started from this config directory, or one the idle probe of a VM with an idle limit reads on the VM;
as down --jobs-done: the job's --out paths are fetched into the config directory's job store first, within
job-store-limit; a fetch that fails keeps the VM and is notified once). What bills under no limit (VMs of this tool without one, VMs of other
origins) is reported, never deleted. With --min-runway the credits are read after the deletions, as targon credits
reads them. It asks nothing: the limits are the consent (--dry-run shows what it would do).

Like down --expired, it goes by the limits of the config directory that ran targon up and by the stricter ones each
VM carries (/etc/targon-fleet/limits.json, read over SSH). With --team (what guard install --team schedules) it sweeps
every owner's VMs from the team guard's directory, each by the limits it carries, read over the team guard's key: a VM
whose limits cannot be read (unreachable, made before that key, or a file that sets no limit) is reported in
not_covered and left alone, unless --default-ttl bounds it.
It removes a VM's record only once it verified the VM's deletion: unlike down --all, it never drops the record of a
VM the listing leaves out or shows in a form that fails the checks, so that one odd listing never costs a VM its limits.
One sweep at a time per config directory and profile: a second one exits 0 at once, saying so, and pings nothing. A
lock left by a sweep that died is taken over (an unreadable one once it is 5 minutes old, with a warning). A sweep
holds its lock while pre-delete hooks run, so no other limit is enforced meanwhile: it waits for a hook 30 minutes at
most, whatever the VM's --hook-timeout, then deletes the VM all the same. As down does, it names in each result the
jobs of targon run that the deletion ended (ended_jobs, read on the VM after its hook, 15 s at most; null when unread).

One notification (notify-url) per run that deleted something or left something billing, one when the runway is short.
With a heartbeat URL (--heartbeat-url, TARGON_HEARTBEAT_URL or config heartbeat-url: a healthchecks-style ping URL, a
secret), each run pings it on exit 0 or 14 and pings URL/fail on any other exit, so that a guard that fails or stops
running pages someone; a ping takes at most 5 s, and a failed ping or a refused URL is a warning. Exit codes: 11 when something selected
still bills, else 14 when the runway is shorter than --min-runway, else 0.`)

  static examples = [
    {command: '<%= config.bin %> sweep', description: 'Delete every VM past its limits, report what no limit covers'},
    {command: '<%= config.bin %> sweep --dry-run --json', description: 'What a sweep would delete, without deleting'},
    {command: '<%= config.bin %> sweep --idle-limit 45m --min-runway 6h', description: 'Idle limit for VMs without one; runway alarm'},
    {command: '<%= config.bin %> guard install --cron', description: 'Run it every 5 minutes from cron'},
  ]

  static flags = {
    ...EVENT_FLAGS,
    'any-owner': Flags.boolean({
      default: false,
      summary: "Sweep every owner's VMs in a shared org (default: your owner's, or refuse a mix), as on down.",
    }),
    hooks: hooksFlag(),
    team: Flags.boolean({
      default: false,
      summary:
        "Sweep as the org's team guard: every owner's VMs, each by the limits it carries, read over the team guard's key (targon guard install --team).",
    }),
    'default-ttl': durationFlag('--default-ttl', {
      summary:
        'With --team: the TTL, from its creation, of a VM whose limits cannot be read (unreachable, or made before the team guard key); default: such VMs are reported and left alone.',
    }),
    'dry-run': Flags.boolean({default: false, summary: 'Print what would be deleted; delete nothing, notify nothing.'}),
    fleet: Flags.string({summary: 'Only this fleet (default: every fleet).'}),
    guard: Flags.boolean({
      default: false,
      summary:
        "As the guard runs it (guard install puts it in the scheduled command): record the run for targon guard status, and rotate the guard's log.",
    }),
    'heartbeat-url': Flags.string({
      summary:
        'Ping URL of a dead-man switch (healthchecks-style), pinged on exit 0 or 14, URL/fail otherwise; prefer TARGON_HEARTBEAT_URL or config heartbeat-url, as a command line shows in ps.',
    }),
    'idle-limit': durationFlag('--idle-limit', {
      summary:
        "The idle limit of VMs without one of their own, e.g. 45m (a VM's own limit, from up --idle, wins; default: config idle-limit).",
    }),
    'min-runway': durationFlag('--min-runway', {
      summary:
        'After the deletions, exit 14 (RUNWAY_SHORT) and notify when the credits last less than this: 6h, 2d (default: config min-runway).',
    }),
    notify: Flags.string({
      summary:
        'Webhook to report to (Slack-compatible JSON) when the sweep deleted or left billing something; prefer TARGON_NOTIFY_URL or config notify-url, as a command line shows in ps.',
    }),
    'over-cost': usdFlag('--over-cost', 'an amount in USD', {
      summary: 'Also delete VMs whose estimated cost in USD (hourly price x age) exceeds this, as down --over-cost (default: off).',
    }),
    warn: durationFlag('--warn', {
      summary:
        'Notify once per VM and deadline when a TTL, budget or idle limit fires within this window, e.g. 15m (default: config warn-window; with --guard, 15m; else off).',
    }),
    parallel: Flags.integer({
      default: MAX_MUTATIONS_IN_FLIGHT,
      max: MAX_MUTATIONS_IN_FLIGHT,
      min: 1,
      summary: 'Deletions and idle probes in flight at once.',
    }),
  }

  public async run(): Promise<SweepResult> {
    const {flags} = this
    if (flags['heartbeat-url'] !== undefined)
      this.addWarning(
        '--heartbeat-url puts the ping URL where ps and crontabs show it: prefer TARGON_HEARTBEAT_URL or targon config set heartbeat-url',
      )
    const startedAt = this.ctx.clock.now()
    try {
      // Resolved first, so that a run failing before its lock (a bad fleet, owner or config) still pings URL/fail.
      const heartbeat = await this.heartbeatUrl()
      try {
        const result = await this.lockedRun()
        if (result.skipped === null) await this.beat(heartbeat, 0)
        return result
      } catch (error) {
        await this.beat(heartbeat, toTargonError(error).exitCode)
        throw error
      }
    } catch (error) {
      if (!this.recorded) await this.recordEarlyFailure(startedAt, toTargonError(error).exitCode)
      throw error
    }
  }

  /**
   * The ping URL, when one is set and taken. A refused one (not https, say) is a warning that names where it came
   * from, never the URL, and the sweep runs without a heartbeat: a ping is optional, the deletions are not.
   */
  private async heartbeatUrl(): Promise<string | undefined> {
    try {
      return await this.ctx.settings.get('heartbeat-url', this.flags['heartbeat-url'])
    } catch (error) {
      if (!isTargonError(error)) throw error
      this.addWarning(`${error.message}: this run pings no heartbeat${error.hint ? ` (${error.hint})` : ''}`)
      return undefined
    }
  }

  /** Whether this run is in the guard's runs already (its lock was taken). */
  private recorded = false

  /**
   * A guard's run that failed before its lock (a bad config, owner, profile or heartbeat URL) is recorded too, so that
   * guard status says the last sweep exited N rather than that none ran. Recording is best effort: the exit code stands.
   */
  private async recordEarlyFailure(startedAt: number, exitCode: number): Promise<void> {
    if (!this.flags.guard) return
    try {
      const profile = await this.ctx.settings
        .profile()
        .then((active) => active.name)
        .catch(() => DEFAULT_PROFILE)
      recordPass(ensureConfigDir(this.ctx.settings.dir), profile, {
        at: new Date(startedAt).toISOString(),
        deleted: 0,
        duration_ms: this.ctx.clock.now() - startedAt,
        exit_code: exitCode,
        skipped: false,
        still_billing: 0,
      })
    } catch (error) {
      this.addWarning(`this run could not be recorded for guard status (${toTargonError(error).message})`)
    }
  }

  /** The sweep under its lock (one at a time per config directory and profile), or the skip when another holds it. */
  private async lockedRun(): Promise<SweepResult> {
    const {flags} = this
    const fleet = flags.fleet === undefined ? null : validateFleet(flags.fleet)
    if (flags.team && !hasGuardKey(this.ctx.settings.dir))
      throw new TargonError('CONFIG', `${this.ctx.settings.dir} has no team guard key`, {
        hint: 'targon guard install --team makes it, registers it with the org and schedules the sweep',
      })
    if (flags['default-ttl'] !== undefined && !flags.team)
      throw usageError('--default-ttl bounds the VMs a team guard cannot read', 'pass it with --team')
    // The team guard enforces every owner's limits: each VM's own, never a selection of one owner.
    const owners = flags.team ? {anyOwner: true, owner: null} : await ownerScope(this.ctx.settings, flags['any-owner'])
    await this.useNotifyUrl(flags.notify, false)
    const profile = (await this.ctx.settings.profile()).name
    const dir = ensureConfigDir(this.ctx.settings.dir)
    const limits = await this.limits()
    const startedAt = this.ctx.clock.now()
    const record = (exitCode: number, result: SweepResult | undefined) => {
      if (!flags.guard) return
      this.recorded = true
      recordPass(dir, profile, {
        at: new Date(startedAt).toISOString(),
        deleted: result?.results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted').length ?? 0,
        duration_ms: this.ctx.clock.now() - startedAt,
        exit_code: exitCode,
        skipped: typeof result?.skipped === 'string',
        still_billing: result?.survivors.length ?? 0,
      })
    }

    if (flags.guard) rotateLog(dir, profile)
    const lock = childPath(join(dir, 'locks'), `sweep-${profile}`, '.lock')
    const outcome = await ifFileLockFree(
      lock,
      async () => {
        try {
          const result = await this.sweep(fleet, owners, profile, limits)
          record(0, result)
          return result
        } catch (error) {
          const failure = toTargonError(error)
          record(failure.exitCode, failure.data as SweepResult | undefined)
          throw error
        }
      },
      this.ctx.warn,
    )
    if (outcome.ran) return outcome.value
    const skipped = `another sweep of ${dir} (profile ${profile}) is running; this one does nothing`
    this.info(skipped)
    const result: SweepResult = {
      dry_run: flags['dry-run'],
      dstack_sync: null,
      kept: [],
      not_covered: [],
      org: null,
      results: [],
      runway: null,
      selection: {
        any_owner: owners.anyOwner,
        fleet,
        idle_limit_seconds: limits.idleLimitMs === null ? null : limits.idleLimitMs / 1000,
        min_runway_hours: limits.minRunwayMs === null ? null : limits.minRunwayMs / 3_600_000,
        over_cost_usd: flags['over-cost'] ?? null,
        owner: owners.owner,
        team: flags.team,
        default_ttl_seconds: flags['default-ttl'] === undefined ? null : flags['default-ttl'] / 1000,
      },
      skipped,
      survivors: [],
      unlimited: [],
      warned: [],
    }
    record(0, result)
    return result
  }

  /** The limits a flag gives, else the config file: the guard's scheduled command carries none. */
  private async limits(): Promise<{idleLimitMs: number | null; minRunwayMs: number | null}> {
    return {
      idleLimitMs: this.flags['idle-limit'] ?? (await this.ctx.settings.get('idle-limit')) ?? null,
      minRunwayMs: this.flags['min-runway'] ?? (await this.ctx.settings.get('min-runway')) ?? null,
    }
  }

  private async sweep(
    fleet: string | null,
    owners: Awaited<ReturnType<typeof ownerScope>>,
    profile: string,
    limits: {idleLimitMs: number | null; minRunwayMs: number | null},
  ): Promise<SweepResult> {
    const {flags} = this
    const deletions = followDeletions(this.events, (line) => this.info(line))
    const dstack = flags['dry-run'] ? undefined : await openLeave(this.ctx, false, this.traceSink())
    return this.withApi(
      async (client) => {
        const org = await this.ctx.org(client)
        let result: SweepResult
        try {
          result = await runSweep(this.ctx, client, client.withSignal(undefined), this.ctx.localState(), {
            configDir: this.ctx.settings.dir,
            dryRun: flags['dry-run'],
            dstack,
            fleet,
            hooks: flags.hooks,
            idleLimitS: limits.idleLimitMs === null ? null : limits.idleLimitMs / 1000,
            labelFleet: await this.ctx.settings.get('fleet'),
            minRunwayMs: limits.minRunwayMs,
            profile,
            warnWindowMs: flags.warn ?? (await this.ctx.settings.get('warn-window')) ?? (flags.guard ? DEFAULT_GUARD_WARN_MS : null),
            onEvent: deletions.onEvent,
            onResult: deletions.onResult,
            onTargets: deletions.onTargets,
            org,
            overCostUsd: flags['over-cost'] ?? null,
            owners,
            parallel: flags.parallel,
            team: flags.team,
            defaultTtlMs: flags['default-ttl'] ?? null,
            reconcileMs: await this.ctx.reconcileWindowMs(),
            sendWarning: async (warning) => this.warnAhead(warning),
            storeLimit: storeLimit(await this.ctx.settings.get('job-store-limit')),
            notifyFetchFailing: (notice) => this.notifyFetchFailing(notice),
          })
        } catch (error) {
          const partial = isTargonError(error) ? (error.data as SweepResult | undefined) : undefined
          if (partial?.results) {
            await this.report(partial, toTargonError(error).exitCode)
            if (!this.jsonEnabled()) this.render(partial)
          }

          throw error
        } finally {
          await dstack?.handle.client.close()
        }

        const short = result.runway?.short === true
        const runwayError = short
          ? new TargonError(
              'RUNWAY_SHORT',
              `the credits of ${org} last about ${formatDuration((result.runway?.runway_hours ?? 0) * 3_600_000)} at ${usd(result.runway?.burn_usd_per_hour ?? 0)} USD/h, less than ${formatDuration((result.selection.min_runway_hours ?? 0) * 3_600_000)}`,
              {data: result, hint: 'add credits, or delete what you do not need: targon down'},
            )
          : undefined
        await this.report(result, runwayError?.exitCode ?? 0)
        // A dry run reports the short runway in its result and exit code; only the real sweep sends it.
        if (runwayError && !result.dry_run)
          await this.notify('runway-short', `targon sweep: ${runwayError.message}`, {
            exitCode: runwayError.exitCode,
            owner: result.selection.owner,
            vms: [],
          })
        if (!this.jsonEnabled()) this.render(result)
        if (runwayError) throw runwayError
        return result
      },
      () => deletions.forcedExitLines(),
    )
  }

  /** One notification for a run that deleted something or left something selected billing. */
  private async report(result: SweepResult, exitCode: number): Promise<void> {
    if (result.dry_run) return
    const deleted = result.results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted')
    if (deleted.length === 0 && result.survivors.length === 0) return
    const named = deleted.map((each) => `${each.name ?? each.uid} (${each.reason})`).join(', ')
    const billing =
      result.survivors.length > 0 ? `; ${stillBillingText({uids: result.survivors})}` : ''
    await this.notify(
      'sweep-deleted',
      `targon sweep deleted ${countOf(deleted.length, 'VM')} in ${result.org}${named ? `: ${named}` : ''}${billing}${[
        ...hooksInWords(result.results),
        ...endedJobsLines(result.results),
        // The sweep's own sync after its deletions repairs dstack's fleets; a failed one leaves that to the next.
        ...(repairedByTheSync(result.dstack_sync) ? [] : dstackOutOfSyncLines(result.results)),
      ]
        .map((line) => `\n${line}`)
        .join('')}`,
      {
        exitCode,
        owner: result.selection.owner,
        stillBilling: result.survivors,
        vms: result.results.map((each) => ({name: each.name, uid: each.uid})),
      },
    )
  }

  /** Tells of a limit about to fire, on stderr and as a notification; false when the notification failed. */
  private async warnAhead(warning: Warning): Promise<boolean> {
    const what = {idle: 'its idle limit', 'max-cost': 'its budget', ttl: 'its TTL'}[warning.limit]
    const text = `targon sweep: ${warning.name ?? warning.uid}${warning.owner ? ` (owner ${warning.owner})` : ''} will be deleted at ${warning.fires_at.slice(0, 16)}Z by ${what}${warning.limit === 'idle' ? ' unless it gets busy' : ''}, at ${warning.price_per_hour === null ? 'an unknown price' : `${usd(warning.price_per_hour)} USD/h`}; to postpone it: ${warning.extend_command}`
    this.info(text)
    // About one VM: its owner, as the text names it.
    return this.notify('sweep-warning', text, {exitCode: 0, owner: warning.owner ?? null, vms: [{name: warning.name, uid: warning.uid}]})
  }

  /** The heartbeat of the run, when a URL is set; a failed ping is a warning. A dry run is not the guard at work. */
  private async beat(url: string | undefined, exitCode: number): Promise<void> {
    if (url === undefined || this.flags['dry-run']) return
    const warning = await ping(url, exitCode)
    if (warning) this.addWarning(warning)
  }

  private render(result: SweepResult): void {
    for (const kept of result.kept) this.log(`kept ${kept.name ?? kept.uid} (${kept.state}): ${kept.reason}`)
    if (result.results.length === 0) this.info('Nothing past a limit.')
    else for (const line of deletionResultLines(result.results, [{header: 'LIMIT', value: (row) => dash(row.reason)}])) this.log(line)
    for (const vm of result.unlimited)
      this.log(
        `no limit: ${vm.name ? `${vm.name} (${vm.uid})` : vm.uid}${vm.origin === 'other' ? ', not made by targon' : ''}, ${vm.price_per_hour === null ? 'price unknown' : `${usd(vm.price_per_hour)} USD/h`}`,
      )
    for (const vm of result.not_covered)
      this.log(
        `not covered: ${vm.name ? `${vm.name} (${vm.uid})` : vm.uid}${vm.owner ? ` of ${vm.owner}` : ''}: limits unknown, ${printable(vm.reason)}`,
      )
    if (result.runway)
      this.log(
        `Runway: ${result.runway.runway_hours === null ? 'unlimited (nothing priced bills)' : formatDuration(result.runway.runway_hours * 3_600_000)} at ${usd(result.runway.burn_usd_per_hour)} USD/h${result.runway.short ? ' (SHORT)' : ''}`,
      )
  }
}

/** Whether the sweep's own dstack sync ran and every fleet of it went through. */
function repairedByTheSync(sync: SweepResult['dstack_sync']): boolean {
  return sync !== null && sync.error === null && sync.fleets.every((fleet) => fleet.action !== 'failed')
}
