import {Flags} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {durationFlag, timeFlag} from '../lib/cli/flags.js'
import {costLines} from '../lib/cli/render/cost.js'
import {parseCostRequest} from '../lib/cli/requests/cost.js'
import {prose} from '../lib/core/output.js'
import {COST_GROUPINGS, type CostResult, runCost} from '../lib/workflows/spend/index.js'

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
    const request = parseCostRequest(this.flags, this.ctx.clock.now())
    const retentionDays = await this.ctx.settings.get('ledger-days')
    return this.withApi(async (client) => {
      const result = await runCost(this.ctx, client, this.ctx.localState(), {
        by: request.by,
        checkCredits: request.checkCredits,
        fleet: request.fleet,
        from: request.from,
        org: await this.ctx.org(client),
        retentionDays,
        to: request.to,
      })
      if (!this.jsonEnabled())
        for (const lines of costLines(result, {chart: Boolean(process.stdout.isTTY), showDeleted: request.showDeleted})) this.log(lines)
      return result
    })
  }
}
