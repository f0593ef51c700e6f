import {Flags} from '@oclif/core'

import {BaseCommand} from '../lib/cli/base-command.js'
import {filterOffers} from '../lib/domain/offers/filter.js'
import {OFFER_SORTS, type OfferSort, normalizeOffer, sortOffers} from '../lib/domain/offers/offers.js'
import {isoNow} from '../lib/core/clock.js'
import {dash, gib, renderTable, usd, prose} from '../lib/core/output.js'
import {usdFlag} from '../lib/cli/flags.js'
import {type OffersResult} from '../lib/workflows/offers/index.js'

export default class Offers extends BaseCommand<typeof Offers, 'offers'> {
  static summary = 'List live Targon VM offers: price, GPUs, CPU, RAM, disk and availability.'

  static description = prose(`Reads the public inventory (no API key needed). Prices are USD per hour for the whole VM.
By default only offers with capacity available now are shown, cheapest first.`)

  static examples = [
    {command: '<%= config.bin %> offers', description: 'All GPU VM offers available now, cheapest first'},
    {command: '<%= config.bin %> offers --gpu rtx6000b --max-price 1.8', description: 'RTX PRO 6000 Blackwell offers under $1.80/h'},
    {command: '<%= config.bin %> offers --min-gpus 8 --sort available', description: 'Offers with 8 or more GPUs, most available first'},
    {command: "<%= config.bin %> offers --json | jq -r '.data.offers[0].resource'", description: 'The cheapest resource name, for scripts'},
  ]

  static flags = {
    all: Flags.boolean({default: false, summary: 'Include sold-out offers.'}),
    gpu: Flags.string({summary: 'GPU model, any common spelling (rtx6000b, RTX-PRO-6000B, h200...).'}),
    'max-price': usdFlag('--max-price', 'USD per hour for the whole VM', {summary: 'Only offers at or under this price (USD/h per VM).'}),
    'min-gpus': Flags.integer({min: 0, summary: 'Only offers with at least this many GPUs.'}),
    sort: Flags.option({default: 'price' as OfferSort, options: OFFER_SORTS})({summary: 'Sort order.'}),
  }

  public async run(): Promise<OffersResult> {
    const {all, gpu, 'max-price': maxPrice, 'min-gpus': minGpus, sort} = this.flags
    const inventory = await this.withApi((client) => client.inventory(), {auth: false})
    for (const skipped of inventory.skipped) this.addWarning(`skipped a malformed offer (${skipped})`)

    const offers = sortOffers(
      filterOffers(
        inventory.offers.map((raw) => normalizeOffer(raw, maxPrice)),
        {gpu, includeSoldOut: Boolean(all), maxPrice, minGpus},
      ),
      sort,
    )
    const result: OffersResult = {
      as_of: isoNow(this.ctx.clock),
      filters: {gpu: gpu ?? null, include_sold_out: Boolean(all), max_price: maxPrice ?? null, min_gpus: minGpus ?? null, sort},
      offers,
    }
    if (!this.jsonEnabled()) this.render(result)
    return result
  }

  private render(result: OffersResult): void {
    if (result.offers.length === 0) {
      this.info('No offers match. Try --all to include sold-out offers, or loosen --gpu, --min-gpus or --max-price.')
      return
    }

    this.log(
      renderTable(
        [
          {header: 'RESOURCE', value: (offer) => offer.resource},
          {header: 'GPU', value: (offer) => dash(offer.gpu_model)},
          {align: 'right', header: 'GPUS', value: (offer) => dash(offer.gpu_count)},
          {align: 'right', header: 'GPU_GB', value: (offer) => dash(offer.gpu_memory_gb)},
          {align: 'right', header: 'VCPU', value: (offer) => dash(offer.vcpus)},
          {align: 'right', header: 'RAM_GIB', value: (offer) => gib(offer.memory_mib)},
          {align: 'right', header: 'DISK_GIB', value: (offer) => gib(offer.disk_mib)},
          {align: 'right', header: 'USD_PER_H', value: (offer) => usd(offer.price_per_hour)},
          {align: 'right', header: 'AVAILABLE', value: (offer) => (offer.available === null ? '?' : String(offer.available))},
        ],
        result.offers,
      ),
    )
  }
}
