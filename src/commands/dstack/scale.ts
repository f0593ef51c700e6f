import {Flags} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import {followDeletions} from '../../lib/cli/deletion-display.js'
import {durationFlag, usdFlag} from '../../lib/cli/flags.js'
import {TargonError, usageError} from '../../lib/core/errors.js'
import {formatDuration, parseDuration} from '../../lib/core/input.js'
import {countOf, deletionLines, prose, usd} from '../../lib/core/output.js'
import {openDstack, validateFleet} from '../../lib/workflows/dstack/index.js'
import {type DstackScaleResult, runDstackScale} from '../../lib/workflows/dstack-scale/index.js'
import {ownerScope} from '../../lib/domain/fleet/owners.js'

/** The lifetime of a VM that scale rents, unless --ttl says otherwise: it never bills without end if dstack goes away. */
const DEFAULT_TTL = '24h'
/** How long a host may stay idle in dstack and on its VM before scale deletes it, unless --idle says otherwise. */
const DEFAULT_IDLE = '30m'

export default class DstackScale extends BaseCommand<typeof DstackScale, 'dstack scale'> {
  static summary = 'Rent VMs into dstack fleet targon-<fleet> while dstack runs wait for capacity; delete the hosts it leaves idle.'

  static description = prose(`One pass, for the guard's timer or by hand. It reads the active runs of the dstack project
(runs/list) and dstack's fleet targon-<fleet>. A run waits for capacity when it is pending after a job of it found no
capacity (status retrying), or has been submitted for 30 s or more, and its configuration names no fleet or this
one. When runs wait and no VM of the fleet is idle in dstack, it rents one VM of --offer per waiting run (less the
VMs already on their way into dstack), never more than --max VMs in the fleet, exactly as targon up rents them: under
--max-price, bootstrapped with the dstack shim, deleted again on failure or Ctrl-C, and each with the limits of an
up (--ttl, default ${DEFAULT_TTL}; --idle, default ${DEFAULT_IDLE}; --max-cost) written on the VM, so that the guard
ends them even if dstack goes away. Then it syncs the dstack fleet (as targon dstack sync).

When no run waits, each VM of the fleet that dstack has idle is probed as down --idle probes it, and one whose own
idle clock says idle past its limit (its own --idle, else this --idle) is taken out of dstack, then deleted, its
pre-delete hook run first.

It never rents while a host is idle in dstack, and deletes only hosts that dstack has idle and whose idle clock, on
which a dstack task is activity, says idle. It reads at most the 100 newest active runs, and does not check whether
the offer fits a run's resources: name an offer that does. Run it from one place at a time (see the dstack guide for
a crontab line).`)

  static examples = [
    {
      command: '<%= config.bin %> dstack scale --fleet train --offer rtx6000b-small --max-price 1.8 --max 4',
      description: 'Up to four VMs in fleet train while dstack runs wait; idle hosts go after 30 min',
    },
    {
      command: '<%= config.bin %> dstack scale --fleet train --offer rtx6000b-small --max-price 1.8 --max 4 --dry-run --json',
      description: 'What it would rent and delete, and why nothing when nothing',
    },
  ]

  static flags = {
    fleet: Flags.string({required: true, summary: 'The targon fleet whose VMs dstack fleet targon-<fleet> holds.'}),
    offer: Flags.string({required: true, summary: 'The offer (resource) to rent, e.g. rtx6000b-small (see targon offers).'}),
    'max-price': Flags.string({
      helpValue: '<USD>',
      summary: 'Price cap in USD/h for the whole VM (required, or set it with targon config set max-price).',
    }),
    max: Flags.integer({max: 64, min: 1, required: true, summary: 'The most VMs the fleet may have; scale rents none beyond.'}),
    idle: durationFlag('--idle', {
      summary: `Idle limit of the VMs it rents, and of the fleet's hosts without one of their own (default ${DEFAULT_IDLE}).`,
    }),
    ttl: durationFlag('--ttl', {summary: `Lifetime of each VM it rents (default ${DEFAULT_TTL}), enforced by the guard.`}),
    'max-cost': usdFlag('--max-cost', 'a budget in USD per VM', {summary: 'Budget in USD of each VM it rents, enforced by the guard.'}),
    'dry-run': Flags.boolean({default: false, summary: 'Say what it would rent and delete; rent, sync and delete nothing.'}),
  }

  public async run(): Promise<DstackScaleResult> {
    const {flags} = this
    const fleet = validateFleet(flags.fleet)
    const maxPrice = (await this.ctx.settings.get('max-price', flags['max-price'])) ?? null
    if (maxPrice === null) throw usageError('a price cap is required', 'pass --max-price <USD per hour>, e.g. --max-price 1.8')
    const owners = await ownerScope(this.ctx.settings, false)
    const dstack = await openDstack(this.ctx, {trace: this.traceSink()})
    if (dstack === null)
      throw new TargonError('CONFIG', 'no dstack server is configured', {
        hint: 'targon config set dstack-url URL, dstack-project NAME and dstack-token (read from stdin), or their TARGON_DSTACK_ variables',
      })
    const deletions = followDeletions(this.events, (line) => this.info(line))
    try {
      return await this.withApi(
        async (client, signal) => {
          const org = await this.ctx.org(client)
          const result = await runDstackScale(
            {...this.ctx, info: (line) => this.info(line), signal},
            client,
            this.ctx.localState(),
            dstack,
            {
              configDir: this.ctx.settings.dir,
              dryRun: flags['dry-run'],
              fleet,
              idleMs: flags.idle ?? parseDuration(DEFAULT_IDLE, '--idle'),
              max: flags.max,
              maxCostUsd: flags['max-cost'] ?? null,
              maxPrice,
              onEvent: deletions.onEvent,
              org,
              owners,
              reconcileMs: await this.ctx.reconcileWindowMs(),
              connectMs: await this.ctx.sshConnectMs(),
              resource: flags.offer,
              ttlMs: flags.ttl ?? parseDuration(DEFAULT_TTL, '--ttl'),
            },
          )
          if (!this.jsonEnabled()) this.render(result)
          return result
        },
        () => [`Exiting without clean-up: targon status --fleet ${fleet} shows what this run rented; targon down deletes it.`],
      )
    } finally {
      await dstack.client.close()
    }
  }

  private render(result: DstackScaleResult): void {
    for (const vm of result.rented) this.log(`rented\t${vm.name}\t${vm.uid}\t${vm.resource}\t${usd(vm.price_per_hour)} USD/h`)
    if (result.removed.length > 0) for (const line of deletionLines(result.removed)) this.log(line)
    const runs = countOf(result.waiting_runs.length, 'waiting run')
    const hosts = `${result.hosts.idle} idle, ${result.hosts.busy} busy, ${result.hosts.coming} on their way`
    this.info(`dstack fleet ${result.dstack_fleet} (project ${result.project}): ${runs}; hosts ${hosts}`)
    if (result.plan)
      this.info(
        `dry run: would rent ${countOf(result.rent, 'VM')} of ${result.plan.vms.map((vm) => vm.offer?.resource ?? '-').join(', ')} for ${usd(result.plan.price_per_hour)} USD/h in all, under a cap of ${usd(result.plan.max_price)} USD/h per VM`,
      )
    if (result.nothing_done) this.info(`nothing to do: ${result.nothing_done.message}`)
    this.info(
      `limits of the VMs it rents: --ttl ${formatDuration(result.limits.ttl_seconds * 1000)}, --idle ${formatDuration(result.limits.idle_limit_seconds * 1000)}${result.limits.max_cost_usd === null ? '' : `, --max-cost ${usd(result.limits.max_cost_usd)} USD`}`,
    )
  }
}
