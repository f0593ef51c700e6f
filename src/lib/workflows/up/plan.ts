/**
 * `targon up --dry-run`: what a run would rent, read from the same inventory and chosen by the same rules as a real
 * run (offers under the cap, cheapest with capacity first, one unit each), with the org, owner, fleet and limits
 * it would use. It only reads (the inventory, the org, its images): it creates, registers and deploys nothing,
 * and it does not register the SSH key or create the owner's project.
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import {TargonError} from '../../core/errors.js'
import {normalizeOffer} from '../../domain/offers/offers.js'
import {OfferUnits, chooseCandidates, offersUnderCap} from '../../domain/capacity/candidates.js'
import {workloadName} from '../../domain/fleet/naming.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {UpPlan} from './schema.js'
import {resolveImage} from './up.js'
import type {RunContext} from '../run-context.js'
import type {UpAsk} from './provisioning.js'

/** What up is asked for, less what only a real up reads (its config directory and reconcile window). */
export type UpPlanAsk = Omit<UpAsk, 'configDir' | 'reconcileMs'>

export async function planUp(run: Pick<RunContext, 'org'>, client: TargonClient, options: UpPlanAsk): Promise<UpPlan> {
  const cap = options.maxPrice ?? 0
  const wanted = {...options, maxPrice: cap}
  const offers = (await client.inventory()).offers.map((raw) => normalizeOffer(raw, cap))
  const adoptOnly = options.resource === undefined && options.gpu === undefined
  // As a run: no offer is an error unless the VM is adopted by --name, or --wait may see capacity come.
  let candidates: Offer[] = []
  if (!adoptOnly) {
    try {
      candidates = chooseCandidates(offers, wanted)
    } catch (error) {
      if (!(error instanceof TargonError) || options.capacity === null || offersUnderCap(offers, wanted).length === 0) throw error
    }
  }

  const org = await run.org(client)
  await resolveImage(client, org, options.image)
  const units = new OfferUnits(candidates)
  const vms = Array.from({length: options.count}, (_, index) => ({
    index: index + 1,
    name: options.label === undefined ? null : workloadName(options.fleet, options.label),
    offer: adoptOnly ? null : (units.take() ?? null),
  }))
  const rentable = vms.filter((vm) => vm.offer !== null).length
  if (!adoptOnly && options.capacity === null && rentable < (options.min ?? options.count))
    throw new TargonError(
      'NO_CAPACITY',
      `only ${rentable} of the ${options.count} VMs would find an offer with capacity at or under ${cap.toFixed(2)} USD/h`,
      {hint: 'lower --count, pass --min, or --wait for capacity'},
    )
  const seconds = (ms: number | undefined) => (ms === undefined ? null : ms / 1000)
  return {
    candidates,
    count: options.count,
    dry_run: true,
    fleet: options.fleet,
    limits: {
      bootstrap: options.bootstrap !== null,
      idle_limit_seconds: seconds(options.bootstrap?.idle.limitMs),
      max_cost_usd: options.maxCostUsd ?? null,
      on_failure: options.onFailure,
      shim: options.bootstrap?.shim ?? false,
      timeout_seconds: options.timeoutMs / 1000,
      ttl_seconds: seconds(options.ttlMs),
      wait_seconds: seconds(options.capacity?.waitMs),
    },
    max_price: options.maxPrice,
    min: options.min ?? null,
    org,
    owner: options.owner,
    price_per_hour: Math.round(vms.reduce((sum, vm) => sum + (vm.offer?.price_per_hour ?? 0), 0) * 10_000) / 10_000,
    vms,
  }
}
