import {Args} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {phaseProgress} from '../lib/cli/progress.js'
import {
  type Printed,
  cleanupNote,
  forcedExitLines,
  noPriceCapWarning,
  planPrinted,
  resultPrinted,
  upNotification,
  upWarningText,
} from '../lib/cli/render/up.js'
import {checkPriceCap, checkUpFlags, parseUpRequest} from '../lib/cli/requests/up.js'
import {UP_FLAGS} from '../lib/cli/up-flags.js'
import {prose} from '../lib/core/output.js'
import {CLEANUP_BUDGET_MS} from '../lib/domain/deletion/delete-workloads.js'
import {planUp, readUpSettings, type UpPlan, type UpResult} from '../lib/workflows/up/index.js'
import {ClaimsSoFar, upAndAnnounce} from '../lib/workflows/up-announce/index.js'

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

  static flags = UP_FLAGS

  public async run(): Promise<UpPlan | UpResult> {
    const flags = {...this.flags, resource: this.args.resource}
    // The flags' errors come before any setting is read, the price cap's before the other settings are.
    checkUpFlags(flags)
    const maxPrice = (await this.ctx.settings.get('max-price', flags['max-price'])) ?? null
    checkPriceCap(flags, maxPrice)
    if (maxPrice === null) this.addWarning(noPriceCapWarning(flags.name))
    const request = parseUpRequest(flags, {...(await readUpSettings(this.ctx.settings, flags)), maxPrice})
    if (request.dryRun) return this.withApi(async (client) => this.show(await planUp(this.ctx, client, request.ask), planPrinted))

    await this.useNotifyUrl(request.notifyUrl, true)
    const claims = new ClaimsSoFar()
    return this.withApi(
      async (client, signal) => {
        try {
          const result = await upAndAnnounce({...this.ctx, info: (line) => this.info(line)}, client, {
            ask: request.ask,
            audience: {
              notify: (notice) => {
                const {event, facts, text} = upNotification(notice)
                return this.notify(event, text, facts)
              },
              notifying: () => this.notifying(),
              warn: (warning) => this.addWarning(upWarningText(warning)),
            },
            claims,
            dstack: request.dstack,
            progress: this.jsonEnabled() || this.eventsOnStderr() ? undefined : phaseProgress,
            signal,
            trace: this.traceSink(),
          })
          return this.show(result, resultPrinted)
        } catch (error) {
          const cleanup = cleanupNote(error)
          if (!this.jsonEnabled() && !this.eventsOnStderr() && cleanup) process.stderr.write(cleanup)
          throw error
        }
      },
      () => forcedExitLines(claims.uids()),
    )
  }

  /** The human result: a table on stdout and notes on stderr; under --json, only the value, which the envelope carries. */
  private show<R>(value: R, printed: (value: R) => Printed): R {
    if (this.jsonEnabled()) return value
    const {stderr, stdout} = printed(value)
    this.log(stdout)
    for (const line of stderr) this.info(line)
    return value
  }
}
