import {Args, Flags} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {DEFAULT_FLEET} from '../lib/adapters/settings/table.js'

import {type Column, countOf, dash, renderTable, usd, prose} from '../lib/core/output.js'
import {formatDuration} from '../lib/core/input.js'
import type {StatusResult, StatusVm} from '../lib/workflows/status/schema.js'
import {runStatus} from '../lib/workflows/status/status.js'
import {coverageLine} from '../lib/workflows/guard/coverage.js'
import {orgBillingLine} from '../lib/workflows/status/org-billing.js'
import {ownerScope} from '../lib/domain/fleet/owners.js'

export default class Status extends BaseCommand<typeof Status, 'status'> {
  static summary = 'Show your Targon VMs (state, address, price, age, estimated cost, TTL, budget left) and what the org bills per hour.'

  static description = prose(`What the API says, enriched with local state. By default your VMs in every fleet: with an owner
set (targon config set owner NAME, or TARGON_OWNER), that owner's VMs of this tool, with a warning that counts the
others that bill (--any-owner shows them all); with no owner set, every VM of this tool, whoever rented it. --fleet
narrows to one fleet. The configured fleet (else "${DEFAULT_FLEET}") does not narrow it: it says what a short --name
label means, and which fleet --dstack-fleet prints. Drift is flagged: a local record whose VM is gone (local-only), or
a VM of this tool with no local record (server-only, e.g. created on another machine). TTL_LEFT, BUDGET_LEFT and
ENDS_BY go by the stricter of the local record and the limits file each VM carries, read over SSH where this directory
reaches the VM (limits_source: local, vm or both); a VM whose limits are known nowhere shows "limits unknown" and "?",
never "no limit".

The last line sums what the whole org bills per hour, whatever the selection ("No VMs" included), split by owner: VMs
of other owners, VMs without an owner and VMs of other tools included, VMs of unknown price and records of unknown
billing counted and said ("Org acme bills 3.97 USD/h: alice 3.38, bob 0.59"). With --json it is org_billing; -q and
--dstack-fleet print only what a program reads.

With a dstack server configured (dstack-url, dstack-project, dstack-token), the DSTACK column (dstack_state) says
whether a targon-* dstack fleet holds each VM: in-fleet, busy (held, with a dstack job running on it), not-in-fleet,
or unknown when dstack's fleets could not be read within 10 s (a warning; status still succeeds).`)

  static examples = [
    {command: '<%= config.bin %> status', description: 'Your VMs in every fleet, and what the org bills per hour'},
    {command: '<%= config.bin %> status --fleet train', description: 'Only fleet "train"'},
    {
      command: '<%= config.bin %> status --any-owner --any-origin',
      description: "Every VM of the org, including colleagues' and ones other tools created",
    },
    {command: '<%= config.bin %> status tcli-default-k3v9x2qa', description: 'One VM by name (or uid)'},
    {command: '<%= config.bin %> status -q | xargs -n1 targon ssh --print', description: 'uids only, one per line'},
    {
      command: '<%= config.bin %> status --dstack-fleet --fleet train > fleet.dstack.yml && dstack apply -f fleet.dstack.yml',
      description: 'Hand the bootstrapped VMs of fleet "train" to dstack',
    },
  ]

  static args = {
    vms: Args.string({
      ignoreStdin: true,
      description: 'VM names, uids or --name labels (of --fleet, else of the configured fleet); default: your VMs in every fleet',
      required: false,
    }),
  }
  static strict = false

  static flags = {
    usage: Flags.boolean({
      default: false,
      description:
        "Reads each running VM over its pinned SSH connection (at most 8 at once): GPU utilisation and memory, SSH sessions and tunnels, dstack tasks, and how long it has been idle by the VM's own idle clock (with --json: usage, idle_seconds, idle_reason). A VM that cannot be read says why, never a guess.",
      summary: 'Also show what each running VM is doing: GPUs, SSH sessions and tunnels, dstack tasks, and how long it has been idle.',
    }),
    'all-fleets': Flags.boolean({
      exclusive: ['fleet'],
      default: false,
      summary: 'Show the VMs of every fleet (the default without --fleet).',
    }),
    'any-origin': Flags.boolean({default: false, summary: 'Include VMs not created by this tool.'}),
    'any-owner': Flags.boolean({
      default: false,
      summary: "In a shared org with an owner set, show every owner's VMs, not only yours (each VM says whose it is).",
    }),
    'show-deleted': Flags.boolean({
      default: false,
      summary:
        'Also list tombstones (deleted VMs that Targon still lists for a while; they do not bill) and, in the table, records of unknown billing.',
    }),
    'dstack-fleet': Flags.boolean({
      exclusive: ['all-fleets', 'quiet'],
      default: false,
      summary: "Print a dstack SSH fleet file (YAML) for the fleet's bootstrapped VMs; exit 4 when there are none.",
    }),
    fleet: Flags.string({
      summary: 'Show only this fleet (default: every fleet); also the fleet of VMs given by their short --name label.',
    }),
    quiet: Flags.boolean({char: 'q', default: false, summary: 'Print uids only, one per line.'}),
  }

  public async run(): Promise<StatusResult> {
    const targets = this.positionals
    const configuredFleet = await this.ctx.settings.get('fleet', this.flags.fleet)
    // Only --fleet narrows the table; a dstack fleet file is of one fleet, the configured one without it.
    const narrowed = this.flags.fleet !== undefined || this.flags['dstack-fleet']
    const owners = await ownerScope(this.ctx.settings, this.flags['any-owner'])
    return this.withApi(async (client) => {
      const result = await runStatus(this.ctx, client, this.ctx.localState(), {
        anyOrigin: this.flags['any-origin'],
        configuredFleet,
        dstackFleet: this.flags['dstack-fleet'],
        fleet: narrowed && targets.length === 0 ? configuredFleet : null,
        idleLimitS: await this.configuredIdleLimitS(),
        org: await this.ctx.org(client),
        owners,
        showDeleted: this.flags['show-deleted'],
        targets,
        usage: this.flags.usage,
      })
      if (!this.jsonEnabled()) this.render(result)
      return result
    })
  }

  /** The config's idle-limit in seconds, as the guard's sweeps read it; null when none is set. */
  private async configuredIdleLimitS(): Promise<number | null> {
    const ms = await this.ctx.settings.get('idle-limit')
    return ms === undefined || ms === null ? null : ms / 1000
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

    const deleted = result.totals.deleted_hidden_count
    if (deleted > 0) this.info(`${countOf(deleted, 'deleted VM')} still listed by Targon, not billing: --show-deleted lists them`)
    if (result.vms.length === 0) {
      const whose = result.owner === null ? '' : ` of owner ${result.owner}`
      this.info(`No VMs${whose}${result.fleet ? ` in fleet ${result.fleet}` : ''} (org ${result.org}).`)
      this.info(orgBillingLine(result.org, result.org_billing))
      return
    }

    // Records of unknown billing are summed up in one warning; the table lists them with --show-deleted.
    const rows = this.flags['show-deleted'] ? result.vms : result.vms.filter((vm) => vm.billing !== null)
    if (rows.length > 0)
      this.log(
        renderTable(
          [
            {header: 'NAME', value: (vm) => dash(vm.name)},
            {header: 'UID', value: (vm) => vm.uid},
            {header: 'FLEET', value: (vm) => dash(vm.fleet)},
            // Only in a shared org: a single user's table stays as it was.
            ...(result.vms.some((vm) => vm.owner !== null) ? [{header: 'OWNER', value: (vm: StatusVm) => dash(vm.owner)}] : []),
            {header: 'STATUS', value: (vm) => (vm.deleted && vm.status !== 'deleted' ? `${vm.status} (deleted)` : vm.status)},
            {
              header: 'BILLING',
              value: (vm) => (vm.billing === null ? (vm.billing_assumed ? '? (made here)' : '?') : vm.billing ? 'yes' : 'no'),
            },
            {header: 'ADDRESS', value: (vm) => (vm.public_ip ? `${vm.public_ip}:${dash(vm.ssh_port)}` : '-')},
            {header: 'RESOURCE', value: (vm) => dash(vm.resource)},
            {header: 'GPU', value: (vm) => (vm.gpu_model ? `${vm.gpu_count ?? '?'}x ${vm.gpu_model}` : '-')},
            {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.price_per_hour)},
            {align: 'right', header: 'AGE', value: (vm) => (vm.age_seconds === null ? '-' : formatDuration(vm.age_seconds * 1000))},
            {align: 'right', header: 'EST_COST', value: (vm) => usd(vm.estimated_cost_usd)},
            {
              align: 'right',
              header: 'TTL_LEFT',
              value: (vm) =>
                vm.ttl_left_seconds === null
                  ? unknownLimits(vm)
                    ? '?'
                    : '-'
                  : vm.ttl_left_seconds <= 0
                    ? 'expired'
                    : formatDuration(vm.ttl_left_seconds * 1000),
            },
            {
              align: 'right',
              header: 'BUDGET_LEFT',
              value: (vm) =>
                vm.budget_left_usd === null ? (unknownLimits(vm) ? '?' : '-') : vm.budget_left_usd <= 0 ? 'spent' : usd(vm.budget_left_usd),
            },
            {header: 'ENDS_BY', value: (vm) => vm.ends_by},
            {header: 'BOOTSTRAPPED', value: (vm) => (vm.bootstrapped === null ? '?' : vm.bootstrapped ? 'yes' : 'no')},
            // Only with a dstack server configured.
            ...(result.vms.some((vm) => vm.dstack_state !== null)
              ? [{header: 'DSTACK', value: (vm: StatusVm) => dash(vm.dstack_state)}]
              : []),
            ...(this.flags.usage ? USAGE_COLUMNS : []),
          ],
          rows,
        ),
      )
    const {billing_count: billing, count, unknown_billing_count: unknown} = result.totals
    const unknownNote = unknown > 0 ? `, ${unknown} not known yet` : ''
    this.info(coverageLine(result.guard, this.ctx.clock.now()))
    this.info(
      `${countOf(count, 'VM')}, ${billing} billing${unknownNote}: ${usd(result.totals.price_per_hour)} USD/h, about ${usd(result.totals.estimated_cost_usd)} USD so far (estimate)`,
    )
    this.info(orgBillingLine(result.org, result.org_billing))
  }
}

/** status --usage: what each running VM is doing; an unreadable one says why instead. */
const USAGE_COLUMNS: Column<StatusVm>[] = [
  {
    header: 'GPU_UTIL',
    value: (vm) => (vm.usage?.gpus ? vm.usage.gpus.map((gpu) => `${Math.round(gpu.util_pct)}%`).join(',') || '-' : '-'),
  },
  {
    header: 'GPU_MEM',
    value: (vm) =>
      vm.usage?.gpus
        ? vm.usage.gpus.map((gpu) => `${(gpu.mem_used_mib / 1024).toFixed(0)}/${(gpu.mem_total_mib / 1024).toFixed(0)}G`).join(',') || '-'
        : '-',
  },
  {header: 'SSH', value: (vm) => dash(vm.usage?.ssh_sessions ?? null)},
  {header: 'TUNNELS', value: (vm) => dash(vm.usage?.tunnels ?? null)},
  {
    header: 'TASKS',
    // At work (not terminated); '?' when the VM was read but the shim's task list was not (IDLE_REASON says why).
    value: (vm) =>
      vm.usage?.dstack_tasks
        ? String(vm.usage.dstack_tasks.filter((task) => task.status !== 'terminated').length)
        : vm.usage?.state === 'busy'
          ? '?'
          : '-',
  },
  {header: 'IDLE', value: (vm) => (vm.usage ? (vm.idle_seconds === null ? 'unknown' : formatDuration(vm.idle_seconds * 1000)) : '-')},
  {header: 'IDLE_REASON', value: (vm) => dash(vm.idle_reason)},
]

/** A VM of this tool whose limits are known nowhere (no record here, no file read from it): '?' rather than "none". */
function unknownLimits(vm: {origin: string; limits_source: string | null}): boolean {
  return vm.origin === 'this-tool' && vm.limits_source === null
}
