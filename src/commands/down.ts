import {Args, Flags} from '@oclif/core'

import {MAX_MUTATIONS_IN_FLIGHT} from '../lib/adapters/targon/http.js'
import {stillBillingText} from '../lib/cli/render/still-billing.js'
import {BaseCommand, EVENT_FLAGS, toTargonError} from '../lib/cli/base-command.js'
import {deletionResultLines, dstackOutOfSyncLines, endedJobsLines, followDeletions} from '../lib/cli/deletion-display.js'
import {runDown} from '../lib/workflows/down/down.js'
import {othersInWords} from '../lib/workflows/down/targets.js'
import {isBulk} from '../lib/workflows/down/selection.js'
import {NOT_RUNNING} from '../lib/domain/idle/idle.js'
import {isTargonError, usageError} from '../lib/core/errors.js'
import {validateFleet} from '../lib/adapters/settings/table.js'
import type {KnownVm} from '../lib/domain/fleet/fleet-read.js'
import {countOf, prose} from '../lib/core/output.js'
import {durationFlag, hooksFlag, usdFlag} from '../lib/cli/flags.js'
import {CLEANUP_BUDGET_MS, type DeleteTarget} from '../lib/domain/deletion/delete-workloads.js'
import type {DownResult} from '../lib/workflows/down/schema.js'
import {ownerScope} from '../lib/domain/fleet/owners.js'
import {confirm} from '../lib/cli/prompt.js'
import {priceAndOwners} from '../lib/adapters/notify/notify.js'
import {hooksInWords} from '../lib/domain/hooks/hook.js'
import {keepUnlessJobsDone} from '../lib/workflows/job/jobs-done.js'
import {runningJobs} from '../lib/workflows/job/running-jobs.js'
import {storeLimit} from '../lib/workflows/job/job-store.js'
import {openLeave} from '../lib/workflows/dstack/leave.js'

export default class Down extends BaseCommand<typeof Down, 'down'> {
  static summary = 'Delete VMs and follow each until it no longer bills.'

  static description = prose(`Selects from the API's own listing, so it works even when local state is lost. Bulk selectors
(--all, --fleet, --older-than, --over-cost, --expired, --idle, --jobs-done) only take VMs this tool created, unless --any-origin is given; VMs named
explicitly are always deleted, and a name or uid that matches nothing exits 4. In a shared org, with an owner set
(targon config set owner NAME, or TARGON_OWNER), bulk selectors take only that owner's VMs and names resolve among them
first, then among VMs without an owner; another owner's VM named by its uid (or one whose owner could not be read)
is deleted only with consent: a terminal asks, naming its owner; --yes goes ahead with a warning that names it;
without a terminal it is refused (exit 2) unless --any-owner. With no owner set, a bulk deletion that would reach VMs of more than one owner
is refused (exit 2); --any-owner takes every owner's. With names, --fleet only says which fleet
their labels belong to (down worker1 --fleet train deletes tcli-train-worker1 alone); names cannot be combined with the
other selectors (exit 2). On a terminal, bulk deletion asks
first, with --json too (skip with --yes); without a terminal (cron) it proceeds.

Targon deletes softly: a deleted VM stays listed for a while as a "deleted" or "error" tombstone that no longer
bills; down counts it as gone and sends it nothing more. A suspended or crashed VM still bills, and Targon refuses
to delete it (HTTP 500) until it runs: down deploys it, waits until it runs, and deletes it (woken-and-deleted).
A registered workload that was never deployed is refused too, but does not run: down tries it once per run and
reports it as left-registered; --wake-registered deploys it briefly so that it can be deleted.

Each VM's deletion has a budget of ${CLEANUP_BUDGET_MS / 60_000} minutes (a wake-then-delete included). Ctrl-C or SIGTERM starts no
further deletion and lets those under way finish within that budget, then exits 130 (143) with per-VM results; a
second one exits at once and names what still bills. Exit code 0 only when nothing selected still bills; 11
otherwise, with a per-VM result.

Just before a running VM is deleted (after its pre-delete hook), its jobs are read as targon jobs reads them, all the
VMs at once within 15 s: each result names the jobs of targon run that its deletion ended (ended_jobs, and "ended job
ID" on its line; with --dry-run, those it would end). A VM not read in time is deleted all the same (ended_jobs null,
with a warning), and Ctrl-C during the reading ends it and deletes at once: the reading never keeps a VM.

With a dstack server configured (dstack-url, dstack-project, dstack-token), each VM first leaves the targon-* dstack
fleet that holds it (delete_instances). A VM that runs a dstack job is waited for, up to its hook budget
(--hook-timeout, else its up --hook-timeout, else 10 minutes), then deleted all the same with a warning; --force
deletes it at once, and says so. A dstack that cannot be reached never stops a deletion: a warning, and the next
targon dstack sync (or the guard's sweep) repairs the fleet. With --json, each result's dstack says which happened.`)

  static examples = [
    {command: '<%= config.bin %> down tcli-default-k3v9x2qa', description: 'One VM by name (or uid)'},
    {command: '<%= config.bin %> down --all --yes', description: 'Every VM this tool created, in every fleet'},
    {command: '<%= config.bin %> down --fleet train --older-than 6h', description: 'Fleet "train" VMs older than six hours'},
    {command: '<%= config.bin %> down --expired', description: 'Delete VMs whose --ttl ran out or budget is spent, once'},
    {
      command: '<%= config.bin %> guard install --cron',
      description: 'Enforce the limits on a schedule instead: the guard sweeps every 5 minutes',
    },
    {
      command: '<%= config.bin %> down --over-cost 50',
      description: 'From any machine: delete VMs whose estimated cost (price x age) exceeds 50 USD',
    },
    {command: '<%= config.bin %> down --all --dry-run --json', description: 'What --all would delete, without deleting'},
  ]

  static args = {vms: Args.string({ignoreStdin: true, description: 'VM names or uids', required: false})}
  static strict = false

  static flags = {
    ...EVENT_FLAGS,
    all: Flags.boolean({default: false, summary: 'Every VM this tool created (all fleets).'}),
    'any-origin': Flags.boolean({default: false, summary: 'Let bulk selectors take VMs not created by this tool.'}),
    'any-owner': Flags.boolean({
      default: false,
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
    fleet: Flags.string({
      summary: 'Every VM of this fleet; with VM names, only the fleet their labels belong to.',
    }),
    'ignore-missing': Flags.boolean({default: false, summary: 'A name or uid that matches nothing is not an error (default: exit 4).'}),
    parallel: Flags.integer({
      default: MAX_MUTATIONS_IN_FLIGHT,
      max: MAX_MUTATIONS_IN_FLIGHT,
      min: 1,
      summary: 'Deletions in flight at once (lower it if the API rate-limits you).',
    }),
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
    const {flags} = this
    const targets = this.positionals
    const olderThan = flags['older-than'] === undefined ? null : flags['older-than'] / 1000
    const fleet = flags.fleet === undefined ? null : validateFleet(flags.fleet)
    const overCost = flags['over-cost'] ?? null
    const owners = await ownerScope(this.ctx.settings, flags['any-owner'])
    const selection = {
      all: flags.all,
      any_origin: flags['any-origin'],
      any_owner: owners.anyOwner,
      owner: owners.owner,
      expired: flags.expired,
      fleet,
      older_than_seconds: olderThan,
      over_cost_usd: overCost,
      idle: flags.idle,
      idle_limit_seconds: flags['idle-limit'] === undefined ? null : flags['idle-limit'] / 1000,
      jobs_done: flags['jobs-done'],
      targets,
    }
    if (flags['idle-limit'] !== undefined && !flags.idle) throw usageError('--idle-limit needs --idle', 'add --idle')
    if (flags['hook-timeout'] !== undefined && !flags.hooks)
      throw usageError('--hook-timeout limits the hooks that --no-hooks skips', 'drop one of them')
    if (flags['jobs-done'] && flags.idle) throw usageError('--jobs-done and --idle select differently', 'run them one after the other')
    if (targets.length > 0 && (flags.all || flags.expired || flags.idle || flags['jobs-done'] || olderThan !== null || overCost !== null)) {
      throw usageError(
        'VM names cannot be combined with --all, --expired, --idle, --jobs-done, --older-than or --over-cost',
        'name the VMs alone, or drop the names to select by those flags',
      )
    }

    if (targets.length === 0 && !isBulk(selection)) {
      throw usageError(
        'nothing selected',
        'name VMs, or pass --all, --fleet F, --older-than DUR, --over-cost USD, --expired, --idle or --jobs-done',
      )
    }

    // A deletion never waits on a notify URL: a refused one is a warning (see useNotifyUrl).
    await this.useNotifyUrl(flags.notify, false)
    const deletions = followDeletions(this.events, (line) => this.info(line))
    const storeBytes = await this.ctx.settings.get('job-store-limit')
    const profile = (await this.ctx.settings.profile()).name
    // What of this tool still bills in the fleet after the run, for the notification (see runDown's onStillBilling).
    let stillBilling: {uids: string[]; fromListing: boolean} | undefined
    const dstack = flags['dry-run'] ? undefined : await openLeave(this.ctx, flags.force, this.traceSink())
    return this.withApi(
      async (client, signal) => {
        try {
          const org = await this.ctx.org(client)
          const result = await runDown(this.ctx, client, client.withSignal(undefined), org, this.ctx.localState(), {
            configDir: this.ctx.settings.dir,
            confirm: (vms) => this.confirm(vms, !isBulk(selection), signal),
            confirmOthers: (vms) => this.confirmOthers(vms, signal),
            dryRun: flags['dry-run'],
            dstack,
            hooks: flags.hooks,
            ...(flags['hook-timeout'] !== undefined && {hookTimeoutS: Math.ceil(flags['hook-timeout'] / 1000)}),
            ignoreMissing: flags['ignore-missing'],
            labelFleet: await this.ctx.settings.get('fleet'),
            reconcileMs: await this.ctx.reconcileWindowMs(),
            onEvent: deletions.onEvent,
            onTargets: deletions.onTargets,
            onStillBilling: (uids, fromListing) => (stillBilling = {fromListing, uids}),
            onResult: deletions.onResult,
            parallel: flags.parallel,
            ...(flags['jobs-done'] && {
              narrow: (chosen) =>
                keepUnlessJobsDone(this.ctx, chosen, {
                  configDir: this.ctx.settings.dir,
                  dryRun: flags['dry-run'],
                  notifyFetchFailing: (notice) => this.notifyFetchFailing(notice),
                  parallel: flags.parallel,
                  profile,
                  storeLimit: storeLimit(storeBytes),
                }),
              reasonOf: () => 'job-done' as const,
            }),
            runningJobs: (vm, within) => runningJobs(vm, {configDir: this.ctx.settings.dir, signal: within}),
            selection,
            wakeRegistered: flags['wake-registered'],
          })
          const scheduled = [
            flags.expired && '--expired',
            overCost !== null && `--over-cost ${overCost}`,
            flags.idle && '--idle',
            flags['jobs-done'] && '--jobs-done',
          ].filter(Boolean)
          const deleted = result.results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted')
          const untold = dstackOutOfSyncLines(deleted)
          if (scheduled.length > 0 && !flags['dry-run'] && deleted.length > 0)
            await this.notify(
              'down-deleted',
              `targon down ${scheduled.join(' ')} deleted ${countOf(deleted.length, 'VM')} in ${org}: ${deleted.map((each) => each.name ?? each.uid).join(', ')} (${priceAndOwners(factsOf(deletions.selected(), deleted))} no longer billing)${stillBillingNote(stillBilling)}${[
                ...hooksInWords(deleted),
                ...endedJobsLines(deleted),
                ...untold,
              ]
                .map((line) => `\n${line}`)
                .join('')}`,
              {
                exitCode: 0,
                owner: selection.owner,
                stillBilling: stillBilling?.uids ?? [],
                vms: deleted.map((each) => ({name: each.name, uid: each.uid})),
              },
            )
          // A deletion dstack was not told of, without a scheduled deletion's notification to carry it.
          else if (untold.length > 0)
            await this.notify('dstack-out-of-sync', `targon down in ${org}: ${untold.join('')}`, {
              exitCode: 0,
              owner: selection.owner,
              vms: deleted.map((each) => ({name: each.name, uid: each.uid})),
            })
          if (!this.jsonEnabled()) this.render(result)
          return result
        } catch (error) {
          // Interrupted or still billing: the per-VM results are the result all the same (in data.results with --json).
          const partial = isTargonError(error) ? (error.data as DownResult | undefined) : undefined
          if (partial?.survivors && partial.survivors.length > 0) {
            const interrupted = isTargonError(error) && error.code === 'INTERRUPTED'
            await this.notify(
              interrupted ? 'interrupted-billing' : 'down-still-billing',
              `targon down${interrupted ? ' was interrupted' : ''}: ${stillBillingText({
                facts: factsOf(
                  deletions.selected(),
                  partial.survivors.map((uid) => ({uid})),
                ),
                org: partial.org,
                uids: partial.survivors,
              })}`,
              {
                exitCode: toTargonError(error).exitCode,
                owner: selection.owner,
                stillBilling: [...new Set([...partial.survivors, ...(stillBilling?.uids ?? [])])],
                vms: partial.results.map((each) => ({name: each.name, uid: each.uid})),
              },
            )
          }

          if (!this.jsonEnabled() && partial?.results) this.render(partial)
          throw error
        } finally {
          await dstack?.handle.client.close()
        }
      },
      () => deletions.forcedExitLines(),
    )
  }

  /**
   * Bulk deletion on a terminal asks first, on stderr, with --json too (--json is no consent); explicit targets,
   * --yes and non-interactive runs (cron) do not. With --events ndjson there is no prompt: --yes is needed.
   */
  private async confirm(vms: KnownVm[], explicitOnly: boolean, stop: AbortSignal): Promise<boolean> {
    if (explicitOnly || this.flags.yes || !process.stdin.isTTY || !process.stderr.isTTY) return true
    if (this.eventsOnStderr())
      throw usageError(
        '--events ndjson shows no prompt, and a bulk deletion on a terminal asks first',
        'pass --yes to delete without asking',
      )
    const names = vms.map((vm) => vm.name ?? vm.uid).join(', ')
    return confirm(`Delete ${countOf(vms.length, 'VM')} (${names})?`, 'nothing was deleted', stop)
  }

  /** VMs named by uid that are another owner's: --yes goes ahead and says whose; a terminal asks, naming the owners. */
  private async confirmOthers(vms: KnownVm[], stop: AbortSignal): Promise<boolean | undefined> {
    if (this.flags.yes) {
      this.addWarning(`deleting with --yes: ${othersInWords(vms)}`)
      return true
    }
    if (!process.stdin.isTTY || !process.stderr.isTTY || this.eventsOnStderr()) return undefined
    return confirm(`${othersInWords(vms)}. Delete all the same?`, 'nothing was deleted', stop)
  }

  private render(result: DownResult): void {
    const full = this.flags['show-deleted']
    // --idle: what was kept, and why, comes first (busy or unreadable VMs are part of the result). VMs not running are
    // summed up in one warning, unless --show-deleted.
    for (const kept of result.kept)
      if (full || !kept.reason.startsWith(NOT_RUNNING)) this.log(`kept ${kept.name ?? kept.uid} (${kept.state}): ${kept.reason}`)
    const deleted = result.deleted_listed
    if (full) for (const vm of deleted) this.log(`deleted, still listed: ${vm.name ?? vm.uid} (${vm.uid})`)
    else if (deleted.length > 0)
      this.info(`${countOf(deleted.length, 'deleted VM')} still listed by Targon, not billing, left alone: --show-deleted lists them`)
    if (result.results.length === 0) {
      this.info('Nothing to delete.')
      return
    }

    for (const line of deletionResultLines(result.results)) this.log(line)
  }
}

/** The price and owner of each of these VMs, as the listing gave them when they were selected (unknown without). */
function factsOf(selected: DeleteTarget[], vms: {uid: string}[]): {price_per_hour: number | null; owner: string | null}[] {
  return vms.map((vm) => {
    const facts = selected.find((target) => target.uid === vm.uid)?.facts
    return {owner: facts?.owner ?? null, price_per_hour: facts?.price_per_hour ?? null}
  })
}

/** What a notification's text says of the VMs still billing after a down, and where that knowledge comes from. */
function stillBillingNote(still: {uids: string[]; fromListing: boolean} | undefined): string {
  if (!still || still.uids.length === 0) return ''
  const source = still.fromListing ? '' : ' (as before the deletion: the final listing failed)'
  return `; still billing in the fleet: ${still.uids.join(', ')}${source}`
}
