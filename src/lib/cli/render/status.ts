/**
 * What `targon status` prints in text mode, from its result: the dstack fleet file, the uids (-q), or the table with
 * the lines around it. Pure: the command writes each line where it says.
 */
import {type Column, countOf, dash, renderTable, usd} from '../../core/output.js'
import {formatDuration} from '../../core/input.js'
import type {StatusResult, StatusVm} from '../../workflows/status/schema.js'
import {coverageLine} from '../../workflows/guard/coverage.js'
import {orgBillingLine} from '../../workflows/status/org-billing.js'
import type {StatusView} from '../requests/status.js'

/**
 * One piece of status's output: `result` a line of the result (stdout), `note` a line for a person (stderr),
 * `document` a file's text written as it is (stdout).
 */
export interface StatusLine {
  to: 'document' | 'note' | 'result'
  text: string
}

/** Status's output, in order; `now` is the time the guard's coverage is judged at. */
export function statusLines(result: StatusResult, view: StatusView, now: number): StatusLine[] {
  if (result.dstack_fleet) return [{text: result.dstack_fleet.yaml, to: 'document'}]
  if (view.quiet) return result.vms.length > 0 ? [{text: result.vms.map((vm) => vm.uid).join('\n'), to: 'result'}] : []
  const lines: StatusLine[] = []
  const note = (text: string) => lines.push({text, to: 'note'})
  const deleted = result.totals.deleted_hidden_count
  if (deleted > 0) note(`${countOf(deleted, 'deleted VM')} still listed by Targon, not billing: --show-deleted lists them`)
  if (result.vms.length === 0) {
    const whose = result.owner === null ? '' : ` of owner ${result.owner}`
    note(`No VMs${whose}${result.fleet ? ` in fleet ${result.fleet}` : ''} (org ${result.org}).`)
    note(orgBillingLine(result.org, result.org_billing))
    return lines
  }

  // Records of unknown billing are summed up in one warning; the table lists them with --show-deleted.
  const rows = view.showDeleted ? result.vms : result.vms.filter((vm) => vm.billing !== null)
  if (rows.length > 0) lines.push({text: statusTable(result, rows, view), to: 'result'})
  const {billing_count: billing, count, unknown_billing_count: unknown} = result.totals
  const unknownNote = unknown > 0 ? `, ${unknown} not known yet` : ''
  note(coverageLine(result.guard, now))
  note(
    `${countOf(count, 'VM')}, ${billing} billing${unknownNote}: ${usd(result.totals.price_per_hour)} USD/h, about ${usd(result.totals.estimated_cost_usd)} USD so far (estimate)`,
  )
  note(orgBillingLine(result.org, result.org_billing))
  return lines
}

function statusTable(result: StatusResult, rows: StatusVm[], view: StatusView): string {
  return renderTable(
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
      ...(result.vms.some((vm) => vm.dstack_state !== null) ? [{header: 'DSTACK', value: (vm: StatusVm) => dash(vm.dstack_state)}] : []),
      ...(view.usage ? USAGE_COLUMNS : []),
    ],
    rows,
  )
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
