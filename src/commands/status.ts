import {Args, Flags} from '@oclif/core'

import type {TargonClient} from '../lib/targon/client.js'
import {connect} from '../lib/targon/connect.js'
import {BaseCommand} from '../lib/shell/base-command.js'
import {TargonError} from '../lib/shell/errors.js'
import {DEFAULT_FLEET} from '../lib/fleet/naming.js'
import {join} from 'node:path'

import {dstackFleet} from '../lib/bootstrap/dstack-fleet.js'
import {displayGpuModel, normalizeOffer} from '../lib/offers/offers.js'
import {keyDir} from '../lib/ssh/project-key.js'
import {type KnownVm, findVm, snapshot, vmPrice, vmResource} from '../lib/fleet/workloads.js'
import {resolveOrg} from '../lib/settings/org.js'
import {countOf, dash, renderTable, usd} from '../lib/shell/output.js'
import {formatDuration} from '../lib/shell/input.js'
import {configDir, resolveSetting} from '../lib/settings/settings.js'
import {LocalState} from '../lib/state/local-state.js'
import type {DstackFleet, Offer, StatusResult, StatusVm} from '../lib/contract.js'



export default class Status extends BaseCommand<typeof Status> {
  static summary = 'Show your Targon VMs: state, address, price, age, estimated cost and TTL.'

  static description = `What the API says, enriched with local state. By default the VMs this tool created in one fleet
(the configured fleet, else "${DEFAULT_FLEET}"). Drift is flagged: a local record whose VM is gone (local-only), or a VM
of this tool with no local record (server-only, e.g. created on another machine).`

  static examples = [
    {command: '<%= config.bin %> status', description: 'VMs of the default fleet'},
    {command: '<%= config.bin %> status --all-fleets --any-origin', description: 'Every VM of the org, including ones other tools created'},
    {command: '<%= config.bin %> status tcli-default-k3v9x2qa', description: 'One VM by name (or uid)'},
    {command: '<%= config.bin %> status -q | xargs -n1 targon ssh --print', description: 'uids only, one per line'},
    {command: '<%= config.bin %> status --dstack-fleet --fleet train > fleet.dstack.yml && dstack apply -f fleet.dstack.yml', description: 'Hand the bootstrapped VMs of fleet "train" to dstack'},
  ]

  static args = {vms: Args.string({ignoreStdin: true, description: 'VM names, uids or --name labels of the fleet (default: all of the fleet)', required: false})}
  static strict = false

  static flags = {
    'all-fleets': Flags.boolean({exclusive: ['fleet'], default: false, summary: 'Show the VMs of every fleet.'}),
    'any-origin': Flags.boolean({default: false, summary: 'Include VMs not created by this tool.'}),
    'show-deleted': Flags.boolean({default: false, summary: 'Also list tombstones: deleted VMs that Targon still lists for a while (they do not bill).'}),
    'dstack-fleet': Flags.boolean({exclusive: ['all-fleets', 'quiet'], default: false, summary: 'Print a dstack SSH fleet file (YAML) for the fleet\'s bootstrapped VMs; exit 4 when there are none.'}),
    fleet: Flags.string({summary: 'Fleet to show, and of VMs given by their short --name label.'}),
    quiet: Flags.boolean({char: 'q', default: false, summary: 'Print uids only, one per line.'}),
  }

  public async run(): Promise<StatusResult> {
    const targets = this.positionals
    const configuredFleet = await resolveSetting('fleet', this.flags.fleet)
    const fleet = this.flags['all-fleets'] || targets.length > 0 ? null : configuredFleet
    const client = await connect({auth: true, trace: this.traceSink()})
    try {
      const org = await resolveOrg(client, this.flags.org)
      const state = new LocalState(configDir())
      const view = await snapshot(client, org, state)
      for (const problem of view.problems) this.addWarning(problem)

      const shown = view.vms.filter((vm) => this.flags['show-deleted'] || !vm.gone)
      let selected = shown.filter((vm) => (this.flags['any-origin'] || vm.owned) && (fleet === null || vm.fleet === fleet))
      if (targets.length > 0) {
        selected = targets.flatMap((target) => {
          const found = findVm(shown, target, configuredFleet)
          if (found.length === 0) throw new TargonError('NOT_FOUND', `no VM named or with uid ${target}`, {hint: 'run targon status --all-fleets to see them'})
          return found
        })
      }

      const now = Date.now()
      const offers = selected.some((vm) => !gpuModelOf(vm)) ? await this.offersByResource(client) : new Map<string, Offer>()
      const vms = selected.map((vm) => toStatusVm(vm, now, offers))
      const drift = [
        ...selected.filter((vm) => vm.owned && !vm.record).map((vm) => ({kind: 'server-only' as const, name: vm.name, uid: vm.uid})),
        ...view.localOnly.filter((record) => targets.length === 0 && (fleet === null || record.fleet === fleet)).map((record) => ({kind: 'local-only' as const, name: record.name, uid: record.uid})),
      ]
      for (const item of drift) {
        if (item.kind === 'local-only') this.addWarning(`${item.name} has a local record but no live VM; tidy up with targon down ${item.uid ?? item.name}`)
      }

      for (const vm of vms) {
        const which = vm.name ?? vm.uid
        if (vm.status === 'suspended' || (vm.status === 'error' && vm.billing === true)) this.addWarning(`${which} is ${vm.status === 'error' ? 'crashed' : 'suspended'} and still bills; delete it with targon down ${vm.uid}`)
        else if (vm.billing === null) this.addWarning(`${which} shows error: the remains of a deletion (not billing) or a crash (billing); targon down ${vm.uid} settles it`)
      }

      const dstack = this.flags['dstack-fleet'] ? this.dstackFleet(fleet ?? DEFAULT_FLEET, vms) : null
      const result: StatusResult = {
        drift,
        dstack_fleet: dstack,
        fleet,
        org,
        totals: totalsOf(vms),
        vms,
      }
      if (!this.jsonEnabled()) this.render(result)
      return result
    } finally {
      await client.close()
    }
  }

  /** The inventory's offers by resource name: GPUs for workloads whose listing names only their resource. */
  private async offersByResource(client: TargonClient): Promise<Map<string, Offer>> {
    try {
      return new Map((await client.inventory()).offers.map((raw) => [raw.name, normalizeOffer(raw)]))
    } catch (error) {
      this.addWarning(`GPU models unknown: the inventory could not be read (${(error as Error).message})`)
      return new Map()
    }
  }

  private dstackFleet(fleet: string, vms: StatusVm[]): DstackFleet {
    const ready = vms.filter((vm) => vm.bootstrapped && vm.status === 'running' && vm.public_ip && vm.ssh_port)
    const skipped = vms.length - ready.length
    if (skipped > 0) this.addWarning(`${countOf(skipped, 'VM')} of fleet ${fleet} ${skipped === 1 ? 'is' : 'are'} not bootstrapped and running; left out of the dstack fleet (run targon up --name <vm>)`)
    // A fleet file without hosts would only fail later, in dstack apply.
    if (ready.length === 0) {
      throw new TargonError('NOT_FOUND', `no VM of fleet ${fleet} is bootstrapped and running: there is no dstack fleet to print`, {
        hint: `rent one with targon up <resource> --fleet ${fleet}, or finish one with targon up --name <vm> --fleet ${fleet}`,
      })
    }
    const fleetFile = dstackFleet(fleet, join(keyDir(configDir()), 'id_ed25519'), ready.map((vm) => ({hostname: vm.public_ip as string, name: vm.name, port: vm.ssh_port as number, uid: vm.uid})))
    for (const ip of fleetFile.shared_ips) {
      this.addWarning(`several VMs share the IP ${ip}: dstack refuses a hostname already used by another fleet, whatever the port; keep them in one fleet, or give each its own DNS name`)
    }

    return fleetFile
  }

  private render(result: StatusResult): void {
    if (result.dstack_fleet) {
      process.stdout.write(result.dstack_fleet.yaml)
      return
    }

    if (this.flags.quiet) {
      if (result.vms.length > 0) this.log(result.vms.map((vm) => vm.uid).join('\n'))
      return
    }

    if (result.vms.length === 0) {
      this.info(`No VMs${result.fleet ? ` in fleet ${result.fleet}` : ''} (org ${result.org}).`)
      return
    }

    this.log(
      renderTable(
        [
          {header: 'NAME', value: (vm) => dash(vm.name)},
          {header: 'UID', value: (vm) => vm.uid},
          {header: 'FLEET', value: (vm) => dash(vm.fleet)},
          {header: 'STATUS', value: (vm) => (vm.deleted ? `${vm.status} (deleted)` : vm.status)},
          {header: 'BILLING', value: (vm) => (vm.billing === null ? '?' : vm.billing ? 'yes' : 'no')},
          {header: 'ADDRESS', value: (vm) => (vm.public_ip ? `${vm.public_ip}:${dash(vm.ssh_port)}` : '-')},
          {header: 'RESOURCE', value: (vm) => dash(vm.resource)},
          {header: 'GPU', value: (vm) => (vm.gpu_model ? `${vm.gpu_count ?? '?'}x ${vm.gpu_model}` : '-')},
          {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.price_per_hour)},
          {align: 'right', header: 'AGE', value: (vm) => (vm.age_seconds === null ? '-' : formatDuration(vm.age_seconds * 1000))},
          {align: 'right', header: 'EST_COST', value: (vm) => usd(vm.estimated_cost_usd)},
          {align: 'right', header: 'TTL_LEFT', value: (vm) => (vm.ttl_left_seconds === null ? '-' : vm.ttl_left_seconds <= 0 ? 'expired' : formatDuration(vm.ttl_left_seconds * 1000))},
          {header: 'BOOTSTRAPPED', value: (vm) => (vm.bootstrapped ? 'yes' : 'no')},
        ],
        result.vms,
      ),
    )
    const {billing_count: billing, count, unknown_billing_count: unknown} = result.totals
    const unknownNote = unknown > 0 ? `, ${unknown} not known yet` : ''
    this.info(`${countOf(count, 'VM')}, ${billing} billing${unknownNote}: ${usd(result.totals.price_per_hour)} USD/h, about ${usd(result.totals.estimated_cost_usd)} USD so far (estimate)`)
  }
}

function gpuModelOf(vm: KnownVm): string | undefined {
  return vm.workload.resource?.gpu_model ?? vm.workload.resource?.gpu_type ?? undefined
}

function toStatusVm(vm: KnownVm, now: number, offers: Map<string, Offer>): StatusVm {
  const {workload, record} = vm
  const resource = vmResource(vm)
  const offer = resource === null ? undefined : offers.get(resource)
  const created = workload.created_at ? Date.parse(workload.created_at) : Number.NaN
  const ageSeconds = Number.isNaN(created) ? null : Math.max(0, Math.round((now - created) / 1000))
  const price = vmPrice(vm)
  const gpuModel = gpuModelOf(vm) ?? offer?.gpu_model
  const expires = record?.ttl_expires_at ? Date.parse(record.ttl_expires_at) : Number.NaN
  return {
    age_seconds: ageSeconds,
    bootstrapped: record?.bootstrapped ?? false,
    created_at: workload.created_at ?? null,
    billing: vm.billing,
    deleted: vm.gone,
    estimated_cost_usd: ageSeconds === null || price === null || vm.gone ? null : vm.billing === false ? 0 : round((ageSeconds / 3600) * price),
    fleet: vm.fleet,
    gpu_count: workload.resource?.gpu_count ?? offer?.gpu_count ?? null,
    gpu_model: gpuModel ? displayGpuModel(gpuModel) : null,
    local_record: record ? 'present' : 'missing',
    name: vm.name,
    origin: vm.owned ? 'this-tool' : 'other',
    price_per_hour: price,
    public_ip: workload.state?.public_ip ?? null,
    resource,
    ssh_port: workload.state?.ssh_port ?? null,
    status: vm.status,
    ttl_expires_at: record?.ttl_expires_at ?? null,
    ttl_left_seconds: Number.isNaN(expires) ? null : Math.round((expires - now) / 1000),
    uid: vm.uid,
  }
}

/** Only what bills counts: tombstones and registered leftovers do not, and unclassified records are counted apart. */
function totalsOf(vms: StatusVm[]): StatusResult['totals'] {
  const billing = vms.filter((vm) => vm.billing === true)
  return {
    billing_count: billing.length,
    count: vms.length,
    estimated_cost_usd: round(billing.reduce((sum, vm) => sum + (vm.estimated_cost_usd ?? 0), 0)),
    price_per_hour: round(billing.reduce((sum, vm) => sum + (vm.price_per_hour ?? 0), 0)),
    unknown_billing_count: vms.filter((vm) => vm.billing === null).length,
  }
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000
}
