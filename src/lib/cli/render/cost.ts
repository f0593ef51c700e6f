/** What `targon cost` prints: the spend table (with bars on a terminal), the total, and what the figures leave out. */
import {formatDuration} from '../../core/input.js'
import {dash, oneLine, renderTable, usdPrecise} from '../../core/output.js'
import type {CostExcluded, CostGroup, CostResult} from '../../workflows/spend/schema.js'

const BAR_WIDTH = 30
/** Compact: a month of days at most (--by day lists the days with spend, each with its bar). */
const CHART_DAYS = 31

export interface CostView {
  /** Spend per day as bars (on a terminal): beside the table by day, under it otherwise. */
  chart: boolean
  /** --show-deleted: each VM left out of the total, rather than a line per kind. */
  showDeleted: boolean
}

/** The report as the blocks of text it prints on stdout, in order. */
export function costLines(result: CostResult, view: CostView): string[] {
  return [
    ...spendLines(result, view.chart),
    'Estimates: hourly price × billed time, a VM still billing up to now (Targon reports no charges per VM).',
    ...leftOutLines(result, view.showDeleted),
    ...(result.complete ? [] : [`Incomplete: ${result.incomplete_reason}.`]),
    ...(result.reconcile ? [creditsCheckLines(result.reconcile, result.fleet).join('\n')] : []),
  ]
}

function spendLines(result: CostResult, chart: boolean): string[] {
  const range = `${result.from.slice(0, 16)}Z to ${result.to.slice(0, 16)}Z`
  if (result.groups.length === 0) return [`No spend recorded from ${range}${result.fleet ? ` in fleet ${result.fleet}` : ''}.`]
  const byDay = result.group_by === 'day'
  const names = new Map(result.vms.map((vm) => [vm.uid as string | null, vm.name]))
  const most = Math.max(...result.days.map((day) => day.estimated_usd), 0)
  const table = renderTable(
    [
      {header: result.group_by.toUpperCase(), value: (group: CostGroup) => dash(group.key)},
      // By VM the key is the uid, and a person knows the VM by its name.
      ...(result.group_by === 'vm' ? [{header: 'NAME', value: (group: CostGroup) => dash(names.get(group.key))}] : []),
      {align: 'right', header: 'VMS', value: (group) => String(group.vms)},
      {align: 'right', header: 'BILLED_H', value: (group) => (group.seconds / 3600).toFixed(2)},
      {align: 'right', header: 'EST_USD', value: (group) => usdPrecise(group.estimated_usd)},
      ...(chart && byDay ? [{header: '', value: (group: CostGroup) => bar(group.estimated_usd, most)}] : []),
    ],
    result.groups,
  )
  const bars = chartDays(result.days)
    .map((day) => `${day.key}  ${bar(day.estimated_usd, most).padEnd(BAR_WIDTH)}  ${usdPrecise(day.estimated_usd)}`)
    .join('\n')
  return [
    table,
    ...(chart && !byDay ? [`\n${bars}`] : []),
    `\nTotal: about ${usdPrecise(result.total_usd)} USD (estimate) over ${range}, ${result.vms.length} VM(s).`,
  ]
}

/** The VMs counted only up to their last sighting, and those excluded from the total. */
function leftOutLines(result: CostResult, showDeleted: boolean): string[] {
  const bounded = result.vms.filter((vm) => vm.bounded).length
  const lines = bounded > 0 ? [`${bounded} VM(s) ended out of sight: counted up to their last sighting (bounded).`] : []
  if (showDeleted)
    return [
      ...lines,
      ...result.excluded.map((vm) =>
        oneLine(
          `Excluded from the total: ${vm.name ?? vm.uid} (${vm.uid}), ${vm.open_seconds === null ? 'for an unknown time' : `for ${formatDuration(vm.open_seconds * 1000)}`}: ${vm.reason}.`,
        ),
      ),
    ]
  const count = (kind: CostExcluded['kind']) => result.excluded.filter((vm) => vm.kind === kind).length
  const kinds = [
    [count('unknown-billing'), 'of unknown billing (an error record: a crash, or deleted elsewhere)'],
    [count('no-price'), 'without a price'],
  ] as const
  const said = kinds.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`)
  if (said.length > 0) lines.push(`Excluded from the total: ${said.join('; ')}: --show-deleted lists them (--json: excluded).`)
  return lines
}

/** The days the chart shows: from the first day with spend to the last, at most the last CHART_DAYS of them. */
function chartDays(days: CostGroup[]): CostGroup[] {
  const first = days.findIndex((day) => day.vms > 0)
  const last = days.findLastIndex((day) => day.vms > 0)
  return first === -1 ? [] : days.slice(Math.max(first, last + 1 - CHART_DAYS), last + 1)
}

/** A day's spend as a bar, scaled to the costliest day of the range. */
function bar(usdSpent: number, most: number): string {
  return '█'.repeat(most > 0 ? Math.round((usdSpent / most) * BAR_WIDTH) : 0)
}

function creditsCheckLines(check: NonNullable<CostResult['reconcile']>, fleet: string | null): string[] {
  const head =
    check.verdict === 'one-reading'
      ? 'Reconcile: fewer than two readings of the credits in the range (this run recorded one; targon credits records one too).'
      : check.verdict === 'unreadable'
        ? 'Reconcile: the credits could not be read.'
        : `Reconcile ${check.from?.slice(0, 19)}Z to ${check.to?.slice(0, 19)}Z: credits fell ${usdPrecise(check.credits_drop_usd)} USD, the estimate is ${usdPrecise(check.estimated_usd)} USD${fleet === null ? '' : ' (all fleets)'}: ${check.verdict}.`
  return [head, ...check.unseen.map((item) => `  not seen: ${item}`)]
}
