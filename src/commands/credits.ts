import {Flags} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {durationFlag} from '../lib/cli/flags.js'
import {type CreditsResult, runCredits} from '../lib/workflows/spend/index.js'
import {TargonError} from '../lib/core/errors.js'
import {formatDuration} from '../lib/core/input.js'
import {oneLine, prose, usd, usdPrecise} from '../lib/core/output.js'
import {ownerScope} from '../lib/domain/fleet/owners.js'

export default class Credits extends BaseCommand<typeof Credits, 'credits'> {
  static summary = "Show the org's credits, what burns them now, and how many hours they last."

  static description = prose(`The burn rate is the hourly price of every VM known to bill in the org now, any owner and
any origin, as the listing shows it; your share (the owner set, else this tool's VMs) is shown apart. Records whose
billing is unknown (error records that neither a delete note nor the server's history classifies) are not in it: their
prices make the possible burn, shown apart. The runway is credits divided by the burn rate: how long the credits last
if nothing changes. It cannot see other workload types (rentals, sandboxes), which draw on the same credits. Each run
records the reading in the spend ledger; a reading of this directory from 15 minutes to 6 hours ago gives the measured
burn (what the credits really fell by), shown beside the estimate, with a warning when they fall faster than what is
known to bill.

With --min-runway, a runway shorter than that exits 14 (RUNWAY_SHORT) and sends a notification (notify-url), for a
cron alarm. It rings for the known burn, and for the known and possible burn together unless the measured burn shows
that the records of unknown billing do not bill. A measured burn below what is known to bill (equal readings, credits
debited in batches) proves nothing: it is shown as inconclusive and clears nothing.`)

  static examples = [
    {command: '<%= config.bin %> credits', description: 'Credits, burn rate and runway'},
    {command: '<%= config.bin %> credits --min-runway 6h --json', description: 'Exit 14 when the credits last less than 6 hours'},
  ]

  static flags = {
    'min-runway': durationFlag('--min-runway', {
      summary: 'Exit 14 (RUNWAY_SHORT) and notify when the runway is shorter than this: 6h, 2d.',
    }),
    notify: Flags.string({summary: 'Webhook URL (Slack-compatible) to notify when the runway is short (prefer TARGON_NOTIFY_URL).'}),
  }

  public async run(): Promise<CreditsResult> {
    await this.useNotifyUrl(this.flags.notify, true)
    const owners = await ownerScope(this.ctx.settings, false)
    return this.withApi(async (client) => {
      const result = await runCredits(this.ctx, client, this.ctx.localState(), {
        minRunwayMs: this.flags['min-runway'] ?? null,
        org: await this.ctx.org(client),
        owners,
      })
      if (!this.jsonEnabled()) this.render(result)
      if (result.short) {
        const limit = formatDuration((result.min_runway_hours ?? 0) * 3_600_000)
        const knownShort = result.runway_hours !== null && result.runway_hours < (result.min_runway_hours ?? 0)
        const error = new TargonError(
          'RUNWAY_SHORT',
          knownShort
            ? `the credits of ${result.org} last about ${runway(result)} at ${usd(result.burn_usd_per_hour)} USD/h, less than ${limit}`
            : `the credits of ${result.org} last about ${formatDuration((result.possible_runway_hours ?? 0) * 3_600_000)} at ${usd(result.burn_usd_per_hour + result.possible_burn_usd_per_hour)} USD/h if the ${result.possible_vms.length} record(s) of unknown billing bill, less than ${limit}`,
          {
            data: result,
            hint: knownShort
              ? 'add credits, or delete what you do not need: targon down'
              : 'targon status --show-deleted lists the records of unknown billing; targon down <uid> settles one of yours; or add credits',
          },
        )
        await this.notify('runway-short', `targon credits: ${error.message}`, {
          exitCode: error.exitCode,
          stillBilling: result.vms.map((vm) => vm.uid),
          vms: result.vms.map((vm) => ({name: vm.name, uid: vm.uid})),
        })
        throw error
      }

      return result
    })
  }

  private render(result: CreditsResult): void {
    const currency = result.currency ?? 'USD'
    this.log(`Credits: ${usdPrecise(result.credits)} ${currency}`)
    this.log(`Burn rate: ${usd(result.burn_usd_per_hour)} USD/h over ${result.billing_vms} billing VM(s) in the org`)
    this.log(
      `  of which ${result.mine.owner === null ? 'this tool' : `owner ${result.mine.owner}`}: ${usd(result.mine.burn_usd_per_hour)} USD/h over ${result.mine.billing_vms} VM(s)`,
    )
    if (result.possible_vms.length > 0)
      this.log(
        `Possible burn: ${usd(result.possible_burn_usd_per_hour)} USD/h more over ${result.possible_vms.length} record(s) of unknown billing (they bill if they crashed)`,
      )
    if (result.measured_burn_usd_per_hour !== null && result.measured_since !== null)
      this.log(
        `Measured burn: ${usd(result.measured_burn_usd_per_hour)} USD/h (credits since ${result.measured_since.slice(0, 16)}Z)${result.measured_burn_conclusive === false ? ', inconclusive: below what is known to bill' : ''}`,
      )
    this.log(`Runway: ${runway(result)}${result.runway_ends_at ? ` (until about ${result.runway_ends_at.slice(0, 16)}Z)` : ''}`)
    if (result.possible_runway_hours !== null)
      this.log(`  ${formatDuration(result.possible_runway_hours * 3_600_000)} if the records of unknown billing bill`)
    const named = (uids: string[]) =>
      uids.map((uid) => {
        const name = [...result.vms, ...result.possible_vms].find((vm) => vm.uid === uid)?.name
        return name ? `${name} (${uid})` : uid
      })
    if (result.unpriced_vms.length > 0)
      this.log(oneLine(`Not in the burn rate (no price listed): ${named(result.unpriced_vms).join(', ')}`))
    if (result.uncertain_vms.length > 0) this.log(oneLine(`Billing unknown: ${named(result.uncertain_vms).join(', ')}`))
    if (result.invalid_items > 0)
      this.log(
        `${result.invalid_items} listed item(s) fail the checks of the API answer and may bill, not counted: targon status names them`,
      )
  }
}

function runway(result: CreditsResult): string {
  if (result.runway_hours !== null) return formatDuration(result.runway_hours * 3_600_000)
  return result.unpriced_vms.length > 0 ? 'unknown (what bills has no price)' : 'unlimited (nothing bills now)'
}
