/**
 * The one wording of VMs left billing, shared by the notifications of up, down and sweep: what bills, where, what
 * it costs and whose it is when known, and the command that stops it.
 */
import {priceAndOwners} from '../../adapters/notify/notify.js'

export interface StillBilling {
  uids: readonly string[]
  /** The org, where the text does not already name it. */
  org?: string
  /** Each VM's price and owner, where known: summed and named. */
  facts?: readonly {price_per_hour: number | null; owner: string | null}[]
}

/** "STILL BILLING in acme: u1, u2 (3.38 USD/h; owner ana; targon down u1 u2)". */
export function stillBillingText({facts, org, uids}: StillBilling): string {
  const where = org === undefined ? '' : ` in ${org}`
  const priced = facts === undefined ? '' : `${priceAndOwners(facts)}; `
  return `STILL BILLING${where}: ${uids.join(', ')} (${priced}targon down ${uids.join(' ')})`
}
