import {Flags} from '@oclif/core'

import {BaseCommand, EVENT_FLAGS} from '../lib/cli/base-command.js'
import {followDeletions} from '../lib/cli/deletion-display.js'
import {durationFlag, hooksFlag, parallelFlag, usdFlag} from '../lib/cli/flags.js'
import {HEARTBEAT_FLAG_WARNING, type Notice, sweepLines, sweepNotices, warningNotice} from '../lib/cli/render/sweep.js'
import {type SweepSettings, sweepRequest} from '../lib/cli/requests/sweep.js'
import {guardedPass} from '../lib/workflows/guard/index.js'
import {type SweepResult} from '../lib/workflows/sweep/index.js'
import {prose} from '../lib/core/output.js'

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
    parallel: parallelFlag('Deletions and idle probes in flight at once.'),
  }

  public async run(): Promise<SweepResult> {
    const {flags} = this
    if (flags['heartbeat-url'] !== undefined) this.addWarning(HEARTBEAT_FLAG_WARNING)
    const deletions = followDeletions(this.events, (line) => this.info(line))
    const pass = {dryRun: flags['dry-run'], guard: flags.guard, heartbeatFlag: flags['heartbeat-url'], trace: this.traceSink()}
    return guardedPass(this.ctx, pass, {
      finished: async (result, exitCode, runwayShort) => {
        for (const notice of sweepNotices(result, exitCode, runwayShort)) await this.send(notice)
        if (this.jsonEnabled()) return
        for (const line of sweepLines(result))
          if ('out' in line) this.log(line.out)
          else this.info(line.info)
      },
      info: (line) => this.info(line),
      notifyFetchFailing: (notice) => this.notifyFetchFailing(notice),
      onEvent: deletions.onEvent,
      onResult: deletions.onResult,
      onTargets: deletions.onTargets,
      request: async () => sweepRequest(flags, await this.settingValues()),
      sendWarning: async (warning) => {
        const notice = warningNotice(warning)
        this.info(notice.text)
        return this.send(notice)
      },
      takeNotifyUrl: () => this.useNotifyUrl(flags.notify, false),
      withClient: (work) => this.withApi(work, () => deletions.forcedExitLines()),
    })
  }

  /** The settings the flags leave to decide, read only then: a flag given (or --team, which takes no owner) wins over a bad one. */
  private async settingValues(): Promise<SweepSettings> {
    const {ctx, flags} = this
    return {
      owner: flags.team ? undefined : await ctx.settings.get('owner'),
      idleLimitMs: flags['idle-limit'] === undefined ? await ctx.settings.get('idle-limit') : undefined,
      minRunwayMs: flags['min-runway'] === undefined ? await ctx.settings.get('min-runway') : undefined,
      warnWindowMs: flags.warn === undefined ? await ctx.settings.get('warn-window') : undefined,
    }
  }

  private send(notice: Notice): Promise<boolean> {
    return this.notify(notice.event, notice.text, notice.facts)
  }
}
