import {Args, Flags} from '@oclif/core'

import {BaseCommand, EVENT_FLAGS} from '../lib/cli/base-command.js'
import {followDeletions} from '../lib/cli/deletion-display.js'
import {SELECTION_FLAGS} from '../lib/cli/fleet-command.js'
import {durationFlag, hooksFlag, parallelFlag, usdFlag} from '../lib/cli/flags.js'
import {confirm} from '../lib/cli/prompt.js'
import {downLines, downNotices} from '../lib/cli/render/down.js'
import {downRequest} from '../lib/cli/requests/down.js'
import {prose} from '../lib/core/output.js'
import {CLEANUP_BUDGET_MS} from '../lib/domain/deletion/delete-workloads.js'
import {prepareDown, runDownRequest} from '../lib/workflows/down-request/index.js'
import {type DownResult} from '../lib/workflows/down/index.js'

const BIN = '<%= config.bin %>'
export default class Down extends BaseCommand<typeof Down, 'down'> {
  static summary = 'Delete VMs and follow each until it no longer bills.'
  static description = prose(`Selects from the API's own listing, so it works even when local state is lost. Bulk selectors (--all,
--fleet, --older-than, --over-cost, --expired, --idle, --jobs-done) only take VMs this tool created, unless --any-origin is given; VMs
named explicitly are always deleted, and a name or uid that matches nothing exits 4. In a shared org, with an owner set (targon config set
owner NAME, or TARGON_OWNER), bulk selectors take only that owner's VMs and names resolve among them first, then among VMs without an
owner; another owner's VM named by its uid (or one whose owner could not be read) is deleted only with consent: a terminal asks, naming
its owner; --yes goes ahead with a warning that names it; without a terminal it is refused (exit 2) unless --any-owner. With no owner set,
a bulk deletion that would reach VMs of more than one owner is refused (exit 2); --any-owner takes every owner's. With names, --fleet only
says which fleet their labels belong to (down worker1 --fleet train deletes tcli-train-worker1 alone); names cannot be combined with the
other selectors (exit 2). On a terminal, bulk deletion asks first, with --json too (skip with --yes); without a terminal (cron) it
proceeds.

Targon deletes softly: a deleted VM stays listed for a while as a "deleted" or "error" tombstone that no longer bills; down counts it as
gone and sends it nothing more. A suspended or crashed VM still bills, and Targon refuses to delete it (HTTP 500) until it runs: down
deploys it, waits until it runs, and deletes it (woken-and-deleted). A registered workload that was never deployed is refused too, but
does not run: down tries it once per run and reports it as left-registered; --wake-registered deploys it briefly so that it can be
deleted.

Each VM's deletion has a budget of ${CLEANUP_BUDGET_MS / 60_000} minutes (a wake-then-delete included). Ctrl-C or SIGTERM starts no
further deletion and lets those under way finish within that budget, then exits 130 (143) with per-VM results; a second one exits at once
and names what still bills. Exit code 0 only when nothing selected still bills; 11 otherwise, with a per-VM result.

Just before a running VM is deleted (after its pre-delete hook), its jobs are read as targon jobs reads them, all the VMs at once within
15 s: each result names the jobs of targon run that its deletion ended (ended_jobs, and "ended job ID" on its line; with --dry-run, those
it would end). A VM not read in time is deleted all the same (ended_jobs null, with a warning), and Ctrl-C during the reading ends it and
deletes at once: the reading never keeps a VM.

With a dstack server configured (dstack-url, dstack-project, dstack-token), each VM first leaves the targon-* dstack fleet that holds it
(delete_instances). A VM that runs a dstack job is waited for, up to its hook budget (--hook-timeout, else its up --hook-timeout, else 10
minutes), then deleted all the same with a warning; --force deletes it at once, and says so. A dstack that cannot be reached never stops a
deletion: a warning, and the next targon dstack sync (or the guard's sweep) repairs the fleet. With --json, each result's dstack says
which happened.`)
  static examples = [
    {command: `${BIN} down tcli-default-k3v9x2qa`, description: 'One VM by name (or uid)'},
    {command: `${BIN} down --all --yes`, description: 'Every VM this tool created, in every fleet'},
    {command: `${BIN} down --fleet train --older-than 6h`, description: 'Fleet "train" VMs older than six hours'},
    {command: `${BIN} down --expired`, description: 'Delete VMs whose --ttl ran out or budget is spent, once'},
    {command: `${BIN} guard install --cron`, description: 'Enforce the limits on a schedule instead: the guard sweeps every 5 minutes'},
    {command: `${BIN} down --over-cost 50`, description: 'From any machine: delete VMs whose estimated cost (price x age) exceeds 50 USD'},
    {command: `${BIN} down --all --dry-run --json`, description: 'What --all would delete, without deleting'},
  ]
  static args = {vms: Args.string({ignoreStdin: true, description: 'VM names or uids', required: false})}
  static strict = false
  static flags = {
    ...EVENT_FLAGS,
    all: SELECTION_FLAGS.all({summary: 'Every VM this tool created (all fleets).'}),
    'any-origin': Flags.boolean({default: false, summary: 'Let bulk selectors take VMs not created by this tool.'}),
    'any-owner': SELECTION_FLAGS.anyOwner({
      summary: "Let bulk selectors take every owner's VMs in a shared org, and delete another owner's VM by its uid without asking.",
    }),
    hooks: hooksFlag(),
    'hook-timeout': durationFlag('--hook-timeout', {
      summary:
        "How long each VM's pre-delete hook may run this time, e.g. 2m (default: its up --hook-timeout, kept in this config directory, else 10m). The copy on the VM can only shorten it.",
    }),
    'dry-run': Flags.boolean({default: false, summary: 'Print what would be deleted; delete nothing.'}),
    force: Flags.boolean({
      default: false,
      summary: 'Delete a VM that runs a dstack job without waiting for the job to end (dstack configured: see below).',
    }),
    'show-deleted': Flags.boolean({
      default: false,
      summary: 'List each deleted VM Targon still lists, and each VM --idle kept as not running, not one line per kind.',
    }),
    notify: Flags.string({
      summary:
        'Webhook to report to (Slack-compatible JSON) when VMs still bill, or when --expired or --over-cost deleted some; prefer TARGON_NOTIFY_URL or config notify-url, as a command line shows in ps.',
    }),
    expired: Flags.boolean({
      default: false,
      description:
        "TTLs and budgets are kept in the config directory that ran targon up (the API has no field for them) and in the file each bootstrapped VM carries (/etc/targon-fleet/limits.json), read over SSH from every VM this directory can reach; the stricter of the two wins, so a VM can tighten its limits but never loosen a record's. From a directory that reaches no VM of another (no record, no team guard's key), this finds nothing there: use --older-than or --over-cost, or the team guard (targon guard install --team). A budget is spent when the estimated cost (hourly price x age since creation; Targon reports no per-VM charges) reaches it.",
      summary:
        "VMs whose --ttl has run out or whose --max-cost budget is spent by the estimate (the record's, or the VM's stricter ones: see below).",
    }),
    fleet: SELECTION_FLAGS.fleet({summary: 'Every VM of this fleet; with VM names, only the fleet their labels belong to.'}),
    'ignore-missing': Flags.boolean({default: false, summary: 'A name or uid that matches nothing is not an error (default: exit 4).'}),
    parallel: parallelFlag('Deletions in flight at once (lower it if the API rate-limits you).'),
    'older-than': durationFlag('--older-than', {
      summary:
        "Only VMs older than this, from 1m to 365d, e.g. 6h (alone: all of this tool's VMs older than that). Uses the API's creation time, so it works from any machine.",
    }),
    idle: Flags.boolean({
      default: false,
      description:
        "Reads each VM's idle clock over SSH (the sampler the bootstrap installs keeps it on the VM) and deletes only VMs idle longer than their limit: the VM's own (up --idle), else --idle-limit. A VM that is busy (a GPU above the threshold, an SSH session or tunnel, a dstack task, or what up --idle-check says) or whose clock cannot be read (SSH fails, no sampler, a stale clock) is never deleted for idleness: it is listed in data.kept with the reason, its --ttl and --max-cost still apply, and an unreadable clock adds a warning. Needs the config directory that holds the project key, like --expired.",
      summary: 'Only VMs idle longer than their idle limit (read from each VM; busy or unreadable VMs are kept).',
    }),
    'jobs-done': Flags.boolean({
      default: false,
      description:
        "Reads each VM's jobs over SSH (as targon jobs does; needs the config directory that holds the project key). A VM is deleted (reason job-done, after its pre-delete hook) when one of its run --down jobs has ended and no job of it still runs; the --out paths of those jobs are first copied into the config directory's job store (jobs/<job id>/), at most job-store-limit bytes (default 10G) and 100,000 files per job. A VM whose outputs do not come (or pass that bound), or whose jobs cannot be read, is kept with a warning (its --ttl, --max-cost and idle limit still apply); a failing fetch is notified once per job, and a VM under none of those limits is deleted without its outputs once its fetch has failed 3 times over a day. For the VMs of detached jobs (run --detach --down).",
      summary: 'Only VMs whose run --down job has ended (read from each VM), after fetching its outputs.',
    }),
    'idle-limit': durationFlag('--idle-limit', {
      summary: "With --idle: the limit for VMs without one of their own, e.g. 45m (a VM's own limit, from up --idle, wins).",
    }),
    'over-cost': usdFlag('--over-cost', 'an amount in USD', {
      summary:
        "Only VMs whose estimated cost in USD (hourly price x age, an estimate) exceeds this, e.g. 50 (alone: all of this tool's VMs over it). Uses the API's price and creation time, so it works from any machine.",
    }),
    'wake-registered': Flags.boolean({
      default: false,
      summary: 'Also deploy never-deployed (registered) leftovers briefly so that Targon deletes them.',
      description:
        'Targon refuses to delete a registered workload until it runs. Deploying it bills its hourly price from the deploy until the delete (a few minutes, at the price of its offer), and needs capacity: a refused deploy leaves it registered.',
    }),
    yes: Flags.boolean({char: 'y', default: false, summary: 'Do not ask for confirmation.'}),
  }

  public async run(): Promise<DownResult> {
    const request = downRequest(this.flags, this.positionals, {owner: (await this.ctx.settings.get('owner')) ?? null})
    // A deletion never waits on a notify URL: a refused one is a warning (see useNotifyUrl).
    await this.useNotifyUrl(this.flags.notify, false)
    const deletions = followDeletions(this.events, (line) => this.info(line))
    const prepared = await prepareDown(this.ctx, request, this.traceSink())
    const terminal = Boolean(process.stdin.isTTY && process.stderr.isTTY)
    return this.withApi(
      async (client, signal) => {
        const outcome = await runDownRequest(this.ctx, client, request, prepared, {
          ...deletions,
          asking: {ask: (question) => confirm(question, 'nothing was deleted', signal), eventsOnly: this.eventsOnStderr(), terminal},
          notifyFetchFailing: (notice) => this.notifyFetchFailing(notice),
        })
        for (const notice of downNotices(outcome, deletions.selected())) await this.notify(notice.event, notice.text, notice.facts)
        const print = {stderr: (text: string) => this.info(text), stdout: (text: string) => this.log(text)}
        if (!this.jsonEnabled()) for (const line of downLines(outcome, this.flags['show-deleted'])) print[line.to](line.text)
        if (!outcome.ok) throw outcome.error
        return outcome.result
      },
      () => deletions.forcedExitLines(),
    )
  }
}
