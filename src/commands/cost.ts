import {Flags} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {durationFlag, timeFlag} from '../lib/cli/flags.js'
import {COST_GROUPINGS, type CostExcluded, type CostGroup, type CostResult} from '../lib/workflows/spend/schema.js'
import {formatDuration} from '../lib/core/input.js'
import {dash, oneLine, prose, renderTable, usdPrecise} from '../lib/core/output.js'
import {usageError} from '../lib/core/errors.js'
import {validateFleet} from '../lib/adapters/settings/table.js'
import {runCost} from '../lib/workflows/spend/cost-report.js'

const DEFAULT_SINCE_MS = 7 * 86_400_000
const BAR_WIDTH = 30
/** Compact: a month of days at most (--by day lists the days with spend, each with its bar). */
const CHART_DAYS = 31

export default class Cost extends BaseCommand<typeof Cost, 'cost'> {
  static summary = 'Estimate what VMs cost over a range, running and deleted ones alike, from the local spend ledger.'

  static description = prose(`Targon reports no charges per VM. Every figure here is an estimate: the VM's hourly price
times its billed time, from its deploy to the confirmed end of its billing (a VM still billing counts up to now). The
ledger (ledger/<org>/ in the config directory) records each deploy and deletion made from this directory, and every
listing adds the VMs it meets: those made elsewhere start at the API's created_at. A VM that vanished between two
listings ends at the deleted event of the server's history of it, read once and kept in the ledger; without one, at
the last time this directory saw it (marked bounded: the end was not confirmed). Each report counts a VM still billing
up to its own listing and records that sighting, so that no later report counts less, however the VM ends. A VM whose
end or price is unknown is excluded: listed with its open duration, never in the totals. Days are UTC.

With --reconcile, the drop in the org's credits between the earliest and the latest readings in the range (targon
credits records one each run, and so does this) is put next to the estimate of every VM the ledger knows, any fleet,
over the same interval.`)

  static examples = [
    {command: '<%= config.bin %> cost', description: 'Spend of the last 7 days, per day'},
    {command: '<%= config.bin %> cost --since 30d --by fleet', description: 'The last 30 days, per fleet'},
    {command: '<%= config.bin %> cost --from 2026-11-01 --to 2026-11-30 --by vm --json', description: 'November, per VM, for scripts'},
    {command: '<%= config.bin %> cost --since 1d --reconcile', description: 'Check the estimates against the drop in credits'},
  ]

  static flags = {
    since: durationFlag('--since', {summary: 'Report this span, up to --to or now: 7d, 24h, 90d (default 7d).'}),
    from: timeFlag('--from', false, {summary: 'Start of the range: a UTC date (2026-11-01) or an RFC 3339 time.'}),
    to: timeFlag('--to', true, {summary: 'End of the range (a date includes that whole day; default now).'}),
    fleet: Flags.string({summary: 'Only the VMs of this fleet.'}),
    by: Flags.option({default: 'day' as const, options: COST_GROUPINGS})({summary: 'Group the table by day, fleet, resource or VM.'}),
    'show-deleted': Flags.boolean({
      default: false,
      summary: 'List each VM excluded from the total (end, billing or price unknown), not one line per kind.',
    }),
    reconcile: Flags.boolean({
      default: false,
      summary: "Also compare the drop in the org's credits between the readings in the range with the estimate of every fleet over it.",
    }),
  }

  public async run(): Promise<CostResult> {
    const now = this.ctx.clock.now()
    if (this.flags.from !== undefined && this.flags.since !== undefined)
      throw usageError('--since and --from cannot be combined', 'give a span with --since (and --to), or a range with --from and --to')
    const to = this.flags.to ?? now
    const from = this.flags.from ?? to - (this.flags.since ?? DEFAULT_SINCE_MS)
    if (from >= now) throw usageError(`--from ${new Date(from).toISOString()} is not in the past`, 'give a start before now')
    if (from >= to) throw usageError('--from must come before --to', 'give an earlier --from or a later --to')
    const fleet = this.flags.fleet === undefined ? null : validateFleet(this.flags.fleet)
    const retentionDays = await this.ctx.settings.get('ledger-days')
    return this.withApi(async (client) => {
      const result = await runCost(this.ctx, client, this.ctx.localState(), {
        by: this.flags.by,
        fleet,
        from,
        org: await this.ctx.org(client),
        checkCredits: this.flags.reconcile,
        retentionDays,
        to: this.flags.to ?? null,
      })
      if (!this.jsonEnabled()) this.render(result)
      return result
    })
  }

  private render(result: CostResult): void {
    const range = `${result.from.slice(0, 16)}Z to ${result.to.slice(0, 16)}Z`
    if (result.groups.length === 0) this.log(`No spend recorded from ${range}${result.fleet ? ` in fleet ${result.fleet}` : ''}.`)
    else {
      const byDay = result.group_by === 'day'
      const names = new Map(result.vms.map((vm) => [vm.uid as string | null, vm.name]))
      // On a terminal, spend per day as bars: beside the table by day, under it otherwise.
      const chart = Boolean(process.stdout.isTTY)
      const most = Math.max(...result.days.map((day) => day.estimated_usd), 0)
      this.log(
        renderTable(
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
        ),
      )
      if (chart && !byDay)
        this.log(
          `\n${chartDays(result.days)
            .map((day) => `${day.key}  ${bar(day.estimated_usd, most).padEnd(BAR_WIDTH)}  ${usdPrecise(day.estimated_usd)}`)
            .join('\n')}`,
        )
      this.log(`\nTotal: about ${usdPrecise(result.total_usd)} USD (estimate) over ${range}, ${result.vms.length} VM(s).`)
    }

    this.log('Estimates: hourly price × billed time, a VM still billing up to now (Targon reports no charges per VM).')

    const bounded = result.vms.filter((vm) => vm.bounded).length
    if (bounded > 0) this.log(`${bounded} VM(s) ended out of sight: counted up to their last sighting (bounded).`)
    if (this.flags['show-deleted'])
      for (const vm of result.excluded)
        this.log(
          oneLine(
            `Excluded from the total: ${vm.name ?? vm.uid} (${vm.uid}), ${vm.open_seconds === null ? 'for an unknown time' : `for ${formatDuration(vm.open_seconds * 1000)}`}: ${vm.reason}.`,
          ),
        )
    else {
      const count = (kind: CostExcluded['kind']) => result.excluded.filter((vm) => vm.kind === kind).length
      const kinds = [
        [count('unknown-billing'), 'of unknown billing (an error record: a crash, or deleted elsewhere)'],
        [count('no-price'), 'without a price'],
      ] as const
      const said = kinds.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`)
      if (said.length > 0) this.log(`Excluded from the total: ${said.join('; ')}: --show-deleted lists them (--json: excluded).`)
    }
    if (!result.complete) this.log(`Incomplete: ${result.incomplete_reason}.`)
    if (result.reconcile) this.log(creditsCheckLines(result.reconcile, result.fleet).join('\n'))
  }
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
