import {Args, Flags} from '@oclif/core'

import {DEFAULT_DSTACK_VERSION} from '../lib/adapters/settings/dstack-version.js'
import {DEFAULT_HOOK_TIMEOUT_MS, hookCommandProblem} from '../lib/domain/hooks/hook.js'
import {stillBillingText} from '../lib/cli/render/still-billing.js'
import {BaseCommand, EVENT_FLAGS, toTargonError} from '../lib/cli/base-command.js'
import {EXIT_CODES, type TargonError, asTargonError, isTargonError, usageError} from '../lib/core/errors.js'
import {openDstack} from '../lib/workflows/dstack/open.js'
import {runDstackSync} from '../lib/workflows/dstack/sync.js'
import type {DstackSyncResult} from '../lib/workflows/dstack/schema.js'
import {DEFAULT_FLEET, DEFAULT_IMAGE} from '../lib/adapters/settings/table.js'
import {countOf, dash, deletionLines, oneLine, printable, renderTable, usd, prose} from '../lib/core/output.js'
import {formatDuration, parseDuration} from '../lib/core/input.js'
import {durationFlag, usdFlag} from '../lib/cli/flags.js'
import type {VmTrack} from '../lib/workflows/up/stages.js'
import {guardCoverage} from '../lib/workflows/guard/coverage.js'
import {CLEANUP_BUDGET_MS} from '../lib/domain/deletion/delete-workloads.js'
import {runUp} from '../lib/workflows/up/up.js'
import {billingOfTool, readFleet} from '../lib/domain/fleet/fleet-read.js'
import type {TargonClient} from '../lib/adapters/targon/client.js'
import {phaseProgress} from '../lib/cli/progress.js'
import {priceAndOwners} from '../lib/adapters/notify/notify.js'
import {ON_FAILURE, type OnFailure, type UpPlan, type UpResult} from '../lib/workflows/up/schema.js'
import {type UpPlanAsk, planUp} from '../lib/workflows/up/plan.js'
import {recordFleetRead} from '../lib/domain/ledger/ledger.js'

const DEFAULT_TIMEOUT = '60m'

export default class Up extends BaseCommand<typeof Up, 'up'> {
  static summary = 'Rent GPU VMs under a price cap and wait until they run.'

  static description = prose(`Picks the cheapest offer at or under --max-price (USD/h for the whole VM), registers the
project SSH key with the org (once), creates and deploys the VM with that key and the keys of the org's team guards
(guard install --team: at most 8, found by name in one listing of the org's keys per run), then installs Docker and the NVIDIA Container
Toolkit over SSH (each step skipped when present; one apt-get update and one apt-get install for whatever is
missing, the dstack-shim binary downloading meanwhile; a marker makes a repeat a fast no-op) and starts the dstack
shim. SSH is tried as soon as the VM's state carries an address, even while it still says provisioning; the state is
watched meanwhile, and the VM counts as up only once it also says running.

Phases: register, deploy, wait-running (alongside install and shim-start), install, shim-start.

If anything fails or a signal arrives (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT), what this run created is deleted
(--on-failure auto) and followed until it no longer bills; a signal then exits 128 + its number (130 for Ctrl-C).
That clean-up has its own budget of ${CLEANUP_BUDGET_MS / 60_000} minutes per VM, not bounded by --timeout, so that a suspended or crashed
VM can be woken and deleted (Targon deletes only a running VM). A registered workload whose DELETE Targon refuses
does not run; it is named in the output, and targon down retries it. Re-running with the same --name adopts the
existing VM instead of creating a second one.`)

  static examples = [
    {command: '<%= config.bin %> up rtx6000b-small --max-price 1.8', description: 'One RTX PRO 6000 Blackwell VM at up to $1.80/h'},
    {
      command: '<%= config.bin %> up --gpu h200 --min-gpus 8 --max-price 25 --fleet train',
      description: 'The cheapest 8x H200 VM, in fleet "train"',
    },
    {
      command: '<%= config.bin %> up rtx6000b-small --max-price 1.8 --count 4 --min 2 --ttl 6h',
      description: 'Four VMs in parallel; keep them if at least two come up; expire after 6 h',
    },
    {
      command: '<%= config.bin %> up rtx6000b-small --max-price 1.8 --max-cost 20',
      description: 'A budget of 20 USD: the guard (targon guard install) deletes the VM once its estimated cost reaches it',
    },
    {
      command: '<%= config.bin %> up rtx6000b-small --max-price 1.8 --wait 2h --timeout 30m',
      description: 'Sold out now: watch the inventory for up to 2 h, then allow 30 min for the rest once capacity appears',
    },
    {
      command: '<%= config.bin %> up --gpu h200 --max-price 3 --count 4 --min 2 --wait 45m',
      description: 'Create VMs as capacity appears; after 45 min keep the fleet if at least two came up',
    },
    {
      command: '<%= config.bin %> up rtx6000b-small --max-price 1.8 --name worker1 --json | jq -r .data.vms[0].public_ip',
      description: 'A named VM (re-running adopts it), address for scripts',
    },
  ]

  static args = {
    resource: Args.string({ignoreStdin: true, description: 'Resource (SKU) name from targon offers, e.g. rtx6000b-small', required: false}),
  }

  static flags = {
    ...EVENT_FLAGS,
    notify: Flags.string({
      summary:
        'Webhook to report the outcome to (Slack-compatible JSON); prefer TARGON_NOTIFY_URL or config notify-url, as a command line shows in ps.',
    }),
    count: Flags.integer({default: 1, max: 64, min: 1, summary: 'How many VMs to create, in parallel.'}),
    'dry-run': Flags.boolean({
      default: false,
      summary:
        'Show what would be rented (the offer of each VM, prices against the cap, count, fleet, owner, limits); create, register and deploy nothing.',
    }),
    fleet: Flags.string({summary: `Fleet to put the VMs in (default: config, else "${DEFAULT_FLEET}").`}),
    gpu: Flags.string({summary: 'GPU model instead of a resource: the cheapest matching offer is used.'}),
    image: Flags.string({summary: `VM image (default: config, else ${DEFAULT_IMAGE}).`}),
    'max-cost': usdFlag('--max-cost', 'a budget in USD per VM', {
      description:
        'The API has no place for a budget, so it is kept in this config directory only, like --ttl: the guard (targon guard install) deletes the VM once its estimated cost (hourly price x age since creation; Targon reports no per-VM charges) reaches the budget (targon down --expired does so once). From any machine, targon down --over-cost USD does the same without local state.',
      summary:
        'Budget per VM in USD, e.g. 20; kept locally and enforced by the guard, targon guard install (estimated cost = price x age).',
    }),
    'max-price': Flags.string({
      helpValue: '<USD>',
      summary: 'Price cap in USD/h for the whole VM (required, or set it with targon config set max-price).',
    }),
    min: Flags.integer({min: 1, summary: 'With --count: keep a partial fleet if at least this many VMs come up.'}),
    'min-gpus': Flags.integer({min: 1, summary: 'With --gpu: at least this many GPUs per VM.'}),
    name: Flags.string({
      summary:
        "Name for the VM (with --count 1); re-running with it adopts the existing VM (alone, without a resource or --gpu, it only adopts). With an owner set, only the owner's VM of that name is adopted.",
    }),
    bootstrap: Flags.boolean({
      allowNo: true,
      default: true,
      summary:
        'Install Docker and the NVIDIA Container Toolkit over SSH and start the dstack shim (--no-bootstrap stops once the VM runs).',
    }),
    'dstack-version': Flags.string({
      summary: `dstack-shim version to run (default: config, else ${DEFAULT_DSTACK_VERSION}; "latest" takes the newest).`,
    }),
    'gpu-test': Flags.boolean({
      allowNo: true,
      default: true,
      summary:
        'Check that containers see the GPUs (--no-gpu-test skips it); if the test image cannot be pulled, a runtime-level check runs instead.',
    }),
    idle: durationFlag('--idle', {
      description:
        "The bootstrap installs an idle sampler on every VM (targon-fleet-idle, an unprivileged service) that keeps the VM's idle clock: activity is a GPU at or above 10 % utilisation, an SSH session or port-forward (not targon's own probes, nor the dstack server's tunnel to the shim), a dstack task that is not terminated, and optionally a running container (--idle-containers) or what --idle-check says. --idle stores the limit on the VM and locally; the guard's sweeps (targon guard install) delete VMs idle longer than it (targon down --idle does so once).",
      summary:
        'Idle limit, e.g. 30m (seconds allowed, e.g. 30s): the guard (targon guard install) deletes the VM once it has been idle this long.',
    }),
    'idle-check': Flags.string({
      summary:
        "A command run on the VM as ubuntu every sample; exit 0 means idle (e.g. an empty ComfyUI queue), anything else counts as activity; '' removes it. Kept when a later up adopts the VM without it.",
    }),
    'idle-containers': Flags.boolean({
      allowNo: true,
      summary:
        'Count a running container as activity for the idle clock (--no-idle-containers stops it); kept when a later up adopts the VM without it.',
    }),
    'on-delete': Flags.string({
      summary:
        "A command to run on the VM as ubuntu before targon down or sweep deletes it, e.g. to save a checkpoint (at most 4 KiB, one line); '' removes it. Kept when a later up adopts the VM without it.",
      description:
        "Stored on the VM in /etc/targon-fleet/on-delete.conf (0600 root: it may carry a token), never locally and never on a command line. down and sweep run it over the VM's pinned SSH connection with TARGON_VM_NAME, TARGON_VM_UID and TARGON_DELETE_REASON (ttl, idle, max-cost, over-cost, down, job-done) set, and report its exit code, duration and last output lines; a hook that fails or times out does not stop the deletion, and a VM that cannot be reached is deleted without it. The clean-up of a failed or interrupted up runs no hook. The VM bills while its hook runs: a --max-cost budget can be overshot by up to --hook-timeout of its price.",
    }),
    'hook-timeout': durationFlag('--hook-timeout', {
      summary:
        'How long the --on-delete hook may run before it is stopped and the VM deleted all the same, e.g. 5m (default 10m; a sweep waits 30m at most, as it holds its lock meanwhile). Kept in this config directory as well: the copy on the VM can only shorten it.',
    }),
    reinstall: Flags.boolean({default: false, summary: 'Ignore the bootstrap marker and check every step again.'}),
    'force-shim': Flags.boolean({
      default: false,
      summary: "Install targon's dstack shim on a host that dstack owns (refused while a dstack task runs on it).",
      description:
        "A host that a dstack server has taken over (its shim, shim.env, runner or keys say so, or a task runs on its shim) is reported dstack-managed, and targon leaves its shim, shim.env and unit as they are and never restarts the shim. --force-shim replaces them with targon's pinned shim and its shim.env (dropping the fleet's env: entries) and restarts the shim; it exits 2 and changes nothing while a dstack task runs on the host. dstack installs its own shim again at its next deploy of the host.",
    }),
    dstack: Flags.boolean({
      default: false,
      summary: "Once the VMs are ready, sync dstack's fleet targon-<fleet> (as targon dstack sync), so that dstack can run on them.",
      description:
        'Needs a dstack server configured (dstack-url, dstack-project, dstack-token). A sync that fails is a warning: the VMs stay, and targon dstack sync --fleet F (or the guard) adds them later.',
    }),
    shim: Flags.boolean({allowNo: true, default: true, summary: 'Start the dstack shim (--no-shim skips the shim-start phase).'}),
    'on-failure': Flags.option({default: 'auto' as OnFailure, options: ON_FAILURE})({
      summary: 'On failure or Ctrl-C: auto deletes what this run created; delete also deletes an adopted VM; keep deletes nothing.',
    }),
    timeout: durationFlag('--timeout', {
      summary: `Overall time limit with a unit s, m, h or d, from 1s to 365d (default ${DEFAULT_TIMEOUT}), e.g. 30m (wait-running alone is capped at 20m); with --wait, counted from when capacity is found.`,
    }),
    wait: durationFlag('--wait', {
      description:
        'Without --wait, no capacity under the cap exits 9 or 10 at once. With it, the public inventory is read (without the API key) at most every 15 s (TARGON_CAPACITY_POLL_INTERVAL), backing off, and nothing is created meanwhile; a workload whose deploy was refused for capacity is kept and deployed again when its offer lists capacity. With --count, VMs are created as capacity appears. When the wait runs out, the exit codes and the --min rule are as without it.',
      summary: 'Wait up to this long for capacity under the cap, with a unit s, m, h or d, from 1s to 365d, e.g. 2h.',
    }),
    ttl: durationFlag('--ttl', {
      description:
        'The API has no field for a lifetime, so the TTL is kept in this config directory only: the guard (targon guard install) enforces it from here (targon down --expired does so once), and finds nothing from another machine or a fresh directory: there, targon down --older-than reads the creation time the API reports.',
      summary: 'Lifetime with a unit, from 1m to 365d, e.g. 6h; kept locally and enforced by the guard (targon guard install).',
    }),
  }

  public async run(): Promise<UpPlan | UpResult> {
    const {flags} = this
    const resource = this.args.resource
    if (!resource && !flags.gpu && !flags.name)
      throw usageError('no resource given', 'name a resource (targon up rtx6000b-small ...) or a GPU model (--gpu h200)')
    if (resource && flags.gpu) throw usageError('give either a resource or --gpu, not both', 'drop one of them')
    if (flags['min-gpus'] !== undefined && !flags.gpu) throw usageError('--min-gpus needs --gpu', 'add --gpu <model>')
    if (flags.name !== undefined && flags.count > 1)
      throw usageError('--name works with --count 1 only', 'drop --name to get generated names')
    if (!flags.bootstrap && (flags.idle !== undefined || flags['idle-check'] !== undefined || flags['idle-containers'] !== undefined))
      throw usageError(
        '--idle, --idle-check and --idle-containers need the bootstrap, which installs the idle sampler',
        'drop --no-bootstrap',
      )
    if (flags['hook-timeout'] !== undefined && flags['on-delete'] === undefined)
      throw usageError('--hook-timeout needs --on-delete', 'add --on-delete CMD, the hook it limits')
    const hookProblem = flags['on-delete'] === undefined ? null : hookCommandProblem(flags['on-delete'])
    if (hookProblem) throw usageError(hookProblem, 'give one line of at most 4 KiB, e.g. a script on the VM: --on-delete "~/save.sh"')
    if (!flags.bootstrap && flags['on-delete'] !== undefined)
      throw usageError('--on-delete needs the bootstrap, which prepares the VM for it', 'drop --no-bootstrap')
    if (flags['force-shim'] && !(flags.bootstrap && flags.shim))
      throw usageError('--force-shim needs the shim-start phase', 'drop --no-bootstrap and --no-shim')
    if (flags.min !== undefined && flags.min > flags.count)
      throw usageError(`--min ${flags.min} is more than --count ${flags.count}`, 'lower --min or raise --count')

    const maxPrice = (await this.ctx.settings.get('max-price', flags['max-price'])) ?? null
    const adoptOnly = !resource && !flags.gpu
    if (maxPrice === null && !adoptOnly)
      throw usageError('a price cap is required', 'pass --max-price <USD per hour>, e.g. --max-price 1.8')
    if (maxPrice === null) this.addWarning(`no price cap: the price of ${flags.name} is not checked against one`)
    const fleet = await this.ctx.settings.get('fleet', flags.fleet)
    const image = await this.ctx.settings.get('image', flags.image)
    // Checked before anything is rented, not when a phase needs them.
    const bootstrap = flags.bootstrap
      ? {
          dstackVersion: await this.ctx.settings.get('dstack-version', flags['dstack-version']),
          gpuTest: flags['gpu-test'],
          pullRetryDelayMs: await this.ctx.settings.get('pull-retry-delay'),
          reinstall: flags.reinstall,
          forceShim: flags['force-shim'],
          shim: flags.shim,
          shimHealthTimeoutMs: await this.ctx.settings.get('shim-health-timeout'),
          stateWatchIntervalMs: await this.ctx.settings.get('state-watch-interval'),
          idle: {
            check: flags['idle-check'],
            containers: flags['idle-containers'],
            intervalMs: await this.ctx.settings.get('idle-sample-interval'),
            limitMs: flags.idle,
          },
          onDelete:
            flags['on-delete'] === undefined
              ? undefined
              : flags['on-delete'] === ''
                ? null
                : {command: flags['on-delete'], timeout_s: Math.ceil((flags['hook-timeout'] ?? DEFAULT_HOOK_TIMEOUT_MS) / 1000)},
        }
      : null
    const capacity =
      flags.wait === undefined ? null : {waitMs: flags.wait, pollFloorMs: await this.ctx.settings.get('capacity-poll-interval')}

    const owner = (await this.ctx.settings.get('owner')) ?? null
    const wanted: UpPlanAsk = {
      bootstrap,
      capacity,
      count: flags.count,
      fleet,
      gpu: flags.gpu,
      image,
      label: flags.name,
      maxCostUsd: flags['max-cost'],
      maxPrice,
      min: flags.min,
      minGpus: flags['min-gpus'],
      onFailure: flags['on-failure'],
      owner,
      resource,
      timeoutMs: flags.timeout ?? parseDuration(DEFAULT_TIMEOUT, '--timeout'),
      ttlMs: flags.ttl,
    }
    if (flags['dry-run']) return this.withApi(async (client) => this.renderPlan(await planUp(this.ctx, client, wanted)))

    await this.useNotifyUrl(flags.notify, true)
    let capacityFound: Promise<boolean> | undefined
    let tracked: VmTrack[] = []
    // Whether the run got hold of any workload (created or adopted): a run that got none leaves nothing billing.
    let claimedAny = false
    this.events.on((event) => (claimedAny ||= event.vm?.uid !== null && event.vm?.uid !== undefined))
    return this.withApi(
      async (client, signal) => {
        try {
          const result = await runUp(client, {
            ask: {...wanted, configDir: this.ctx.settings.dir, reconcileMs: await this.ctx.reconcileWindowMs()},
            progress: this.jsonEnabled() || this.eventsOnStderr() ? undefined : phaseProgress,
            run: this.ctx,
            signal,
            track: (vms) => (tracked = vms),
            // Once per run: the first VM that waited and found capacity.
            onCapacityFound: () => {
              capacityFound ??= this.notify(
                'capacity-found',
                `targon up: capacity found after waiting (${describe(resource, flags.gpu)})`,
                {exitCode: 0, owner, vms: []},
              )
            },
          })
          const rolledBack = new Set(result.cleanup?.results.filter((deleted) => deleted.billing === false).map((deleted) => deleted.uid))
          for (const failure of result.failed)
            this.addWarning(
              `${failure.name ?? 'a VM'} failed${failure.uid && rolledBack.has(failure.uid) ? ' and was rolled back' : ''}: ${failure.error.message}`,
            )
          await capacityFound
          const stillBilling = await this.stillBillingAfter(client, result, fleet, owner)
          const names = result.vms.map((vm) => vm.name).join(', ')
          const billing = result.vms.map((vm) => ({owner, price_per_hour: vm.price_per_hour}))
          await this.notify(
            'up-ready',
            `targon up: ${countOf(result.vms.length, 'VM')} ready in ${result.org}: ${names} (${priceAndOwners(billing)})`,
            {
              exitCode: 0,
              owner,
              stillBilling,
              vms: result.vms.map((vm) => ({name: vm.name, uid: vm.uid})),
            },
          )
          await this.sayUnguarded(result)
          if (flags.dstack) result.dstack_sync = await this.addToDstack(client, result.org, fleet, owner)
          if (!this.jsonEnabled()) this.render(result)
          return result
        } catch (error) {
          await capacityFound
          await this.notifyFailure(error, owner, claimedAny)
          // --json carries the clean-up in data.cleanup; a person reads what was deleted here, before the error line.
          const cleanup = isTargonError(error) ? (error.data?.cleanup as UpResult['cleanup'] | undefined) : undefined
          if (!this.jsonEnabled() && !this.eventsOnStderr() && cleanup && cleanup.results.length > 0)
            process.stderr.write(
              printable(
                `Clean-up:\n${deletionLines(cleanup.results)
                  .map((line) => `  ${line}\n`)
                  .join('')}`,
              ),
            )
          throw error
        }
      },
      () => {
        const uids = tracked.flatMap((track) => (track.claim ? [track.claim.uid] : []))
        return uids.length > 0
          ? [`Exiting without clean-up. Still present: ${uids.join(' ')}`, `Delete with: targon down ${uids.join(' ')}`]
          : ['Exiting; nothing this run created is known to exist (run targon status to check).']
      },
    )
  }

  /**
   * up --dstack: the fleet's ready VMs go into dstack's fleet, and the sync's result is returned; any failure is a
   * warning (null), and the VMs stay.
   */
  private async addToDstack(client: TargonClient, org: string, fleet: string, owner: string | null): Promise<DstackSyncResult | null> {
    try {
      const dstack = await openDstack(this.ctx, {trace: this.traceSink()})
      if (dstack === null) {
        this.addWarning('--dstack: no dstack server is configured (dstack-url, dstack-project, dstack-token); the VMs were not added')
        return null
      }

      try {
        const synced = await runDstackSync(
          {...this.ctx, info: (line) => this.info(line)},
          client,
          this.ctx.localState(),
          dstack,
          {configDir: this.ctx.settings.dir, fleet, org, owners: {anyOwner: false, owner}},
        )
        this.info(`dstack fleet ${synced.dstack_fleet}: ${synced.added.length} added, ${synced.unchanged.length} unchanged`)
        return synced
      } finally {
        await dstack.client.close()
      }
    } catch (error) {
      this.addWarning(
        `--dstack: the VMs were not added to dstack (${asTargonError(error).message}); they stay: targon dstack sync --fleet ${fleet} adds them`,
      )
      return null
    }
  }

  /**
   * What of this tool bills in the fleet now, by the org's listing (the VMs of this run and any others), for up-ready's
   * still_billing; read only when a notification goes out. Without a listing: this run's VMs, which bill from now on.
   */
  private async stillBillingAfter(client: TargonClient, result: UpResult, fleet: string, owner: string | null): Promise<string[]> {
    const made = result.vms.map((vm) => vm.uid)
    if (!this.notifying()) return made
    try {
      const state = this.ctx.localState()
      const view = await readFleet(client, result.org, state, {
        clock: this.ctx.clock,
        historyBudget: this.ctx.historyBudget,
        readOwners: owner !== null,
      })
      recordFleetRead(state, result.org, view, this.ctx.clock)
      return [...new Set([...made, ...billingOfTool(view.vms, fleet, owner)])]
    } catch (error) {
      this.addWarning(`the notification's still_billing lists only this run's VMs: the listing failed (${(error as Error).message})`)
      return made
    }
  }

  /**
   * A failed up: what it was, what was rolled back, and, above all, what still bills. An up refused for its price or
   * for capacity before it got hold of any workload says nothing: nothing bills, and a cron line that retries it
   * would flood the channel.
   */
  private async notifyFailure(error: unknown, owner: string | null, claimedAny: boolean): Promise<void> {
    const failure = toTargonError(error)
    if (!claimedAny && (failure.exitCode === EXIT_CODES.PRICE_CAP_EXCEEDED || failure.exitCode === EXIT_CODES.NO_CAPACITY)) return
    const cleanup = failure.data?.cleanup as UpResult['cleanup'] | undefined
    const survivors = cleanup?.survivors ?? []
    const rolledBack = (cleanup?.results ?? []).filter((deleted) => deleted.billing === false).map((deleted) => deleted.uid)
    const interrupted = failure.code === 'INTERRUPTED'
    const text = [
      `targon up ${interrupted ? 'was interrupted' : 'failed'} (${failure.code}): ${failure.message}`,
      rolledBack.length > 0 ? `rolled back: ${rolledBack.join(', ')}` : undefined,
      survivors.length > 0
        ? stillBillingText({facts: survivors.map((uid) => ({owner, price_per_hour: priceOf(failure, uid)})), uids: survivors})
        : undefined,
    ]
      .filter(Boolean)
      .join('; ')
    const event = interrupted && survivors.length > 0 ? 'interrupted-billing' : 'up-failed'
    await this.notify(event, text, {
      exitCode: failure.exitCode,
      owner,
      stillBilling: survivors,
      vms: (cleanup?.results ?? []).map((deleted) => ({name: deleted.name, uid: deleted.uid})),
    })
  }

  /** up --dry-run: what each VM would be rented on (stdout), then the totals, the limits, and that nothing was made. */
  private renderPlan(plan: UpPlan): UpPlan {
    if (this.jsonEnabled()) return plan
    this.log(
      renderTable(
        [
          {header: 'VM', value: (vm) => vm.name ?? `#${vm.index}`},
          {header: 'RESOURCE', value: (vm) => dash(vm.offer?.resource)},
          {header: 'GPU', value: (vm) => (vm.offer?.gpu_model ? `${vm.offer.gpu_count ?? '?'}x ${vm.offer.gpu_model}` : '-')},
          {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.offer?.price_per_hour)},
          {align: 'right', header: 'CAP', value: () => usd(plan.max_price)},
        ],
        plan.vms,
      ),
    )
    const {limits} = plan
    const seconds = (value: number | null) => (value === null ? 'none' : formatDuration(value * 1000))
    this.info(
      `would rent ${countOf(plan.count, 'VM')}${plan.min === null ? '' : ` (keeping at least ${plan.min})`} in ${plan.org}, fleet ${plan.fleet}, ${plan.owner === null ? 'no owner' : `owner ${plan.owner}`}: ${usd(plan.price_per_hour)} USD/h in all, under a cap of ${usd(plan.max_price)} USD/h per VM`,
    )
    this.info(
      `limits: --timeout ${seconds(limits.timeout_seconds)}, --wait ${seconds(limits.wait_seconds)}, --ttl ${seconds(limits.ttl_seconds)}, --max-cost ${limits.max_cost_usd === null ? 'none' : `${usd(limits.max_cost_usd)} USD`}, --idle ${seconds(limits.idle_limit_seconds)}, --on-failure ${limits.on_failure}; ${limits.bootstrap ? (limits.shim ? 'bootstrap and dstack-shim' : 'bootstrap without the shim') : 'no bootstrap'}`,
    )
    this.info('dry run: nothing was created, registered or deployed')
    return plan
  }

  /**
   * Said once, at the end: no guard covers the VMs this run made. Covered: a team guard's key went on them, or a guard
   * on this machine sweeps this config directory and profile (a laptop's counts, though it sleeps).
   */
  private async sayUnguarded(result: UpResult): Promise<void> {
    if (!result.vms.some((vm) => !vm.adopted) || result.guard_keys.length > 0) return
    if (guardCoverage(this.ctx.settings.dir, (await this.ctx.settings.profile()).name, this.ctx.warn).kind !== null) return
    const limits = [
      this.flags.ttl !== undefined && '--ttl',
      this.flags['max-cost'] !== undefined && '--max-cost',
      this.flags.idle !== undefined && '--idle',
    ].filter(Boolean)
    this.addWarning(
      `no guard covers the VMs this run made${limits.length === 0 ? '' : `, so nothing enforces ${limits.join(', ')}`}: run targon guard install --team on an always-on machine (or targon guard install --cron here)`,
    )
  }

  private render(result: UpResult): void {
    this.log(
      renderTable(
        [
          {header: 'NAME', value: (vm) => vm.name},
          {header: 'UID', value: (vm) => vm.uid},
          {header: 'RESOURCE', value: (vm) => vm.resource},
          {header: 'GPU', value: (vm) => (vm.gpu_model ? `${vm.gpu_count ?? '?'}x ${vm.gpu_model}` : '-')},
          {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.price_per_hour)},
          {header: 'SSH', value: (vm) => (vm.public_ip ? `${vm.user}@${vm.public_ip} -p ${dash(vm.ssh_port)}` : '-')},
        ],
        result.vms,
      ),
    )
    for (const vm of result.vms)
      if (vm.dstack?.managed_by === 'dstack-managed')
        this.info(
          `${vm.name}: dstack-managed (${oneLine(vm.dstack.dstack_sign ?? '')}): its shim, shim.env and unit were left as they are; --force-shim takes it back`,
        )
  }
}

/** What up was asked for, for a person: the resource, else the GPU model. */
function describe(resource: string | undefined, gpu: string | undefined): string {
  return resource ?? (gpu ? `a ${gpu}` : 'the named VM')
}

/** A VM's hourly price as a failed run's data reports it; null when it does not. */
function priceOf(failure: TargonError, uid: string): number | null {
  const vms = (failure.data?.vms ?? []) as {uid: string; price_per_hour: number | null}[]
  return vms.find((vm) => vm.uid === uid)?.price_per_hour ?? null
}
