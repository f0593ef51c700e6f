/**
 * A VM for `targon run WORD` when WORD names no VM but an offer (or --gpu names a model): rented exactly as `up`
 * rents one (the price cap, bootstrap and all, its clean-up on failure or interrupt), with an idle limit of 30
 * minutes unless --idle says otherwise, so that it never bills long after its job. A WORD that names a VM must not
 * name an offer too (refuseIfOffer).
 */
import type {RunContext} from '../run-context.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {abortError, asTargonError, isTargonError, usageError} from '../../core/errors.js'
import {matchingOffers} from '../../domain/capacity/candidates.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {gpuKey, normalizeOffer} from '../../domain/offers/offers.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {UpAsk} from '../up/provisioning.js'
import type {UpResult} from '../up/schema.js'
import {runUp} from '../up/up.js'

/** The idle limit of a VM that `targon run` rents for its job, unless --idle says otherwise. */
export const JOB_VM_IDLE_MS = 30 * 60_000
/** up's --timeout default: how long renting and bootstrapping may take. */
const RENT_TIMEOUT_MS = 60 * 60_000

export interface RentRequest {
  /** An offer's resource name, or null with --gpu. */
  resource: string | null
  gpu?: string
  maxPrice: number
  fleet: string
  ttlMs?: number
  idleMs?: number
  maxCostUsd?: number
  waitMs?: number
  /** How many VMs (default 1); with more, those that come up are kept when others fail. */
  count?: number
  owner: string | null
  configDir: string
  reconcileMs: number
  /** The run's settings, clock, events, warnings and history reads. */
  run: RunContext
  signal: AbortSignal
}

export async function rentForJob(client: TargonClient, request: RentRequest): Promise<UpResult> {
  try {
    return await rentWithUp(client, request)
  } catch (error) {
    throw withUpFlagsNamed(error)
  }
}

/** Flags of up that up's hints name and `targon run` does not take (test/unit/hints.test.ts holds up's hints to it). */
export const UP_ONLY_FLAGS = /--(?:timeout|count|min|image|name)\b/

/** An error of up's whose hint names flags that `targon run` does not take, with the hint saying whose they are. */
function withUpFlagsNamed(error: unknown): unknown {
  if (!isTargonError(error) || error.hint === undefined || !UP_ONLY_FLAGS.test(error.hint)) return error
  return error.with({hint: `${error.hint} (flags of targon up: rent the VM with it, then targon run VM -- COMMAND)`})
}

/** Rents as up does, without rentForJob's hints for `targon run`. */
export async function rentWithUp(client: TargonClient, request: RentRequest): Promise<UpResult> {
  return runUp(client, {
    ask: await rentAsk(request),
    run: request.run,
    signal: request.signal,
    track: () => undefined,
  })
}

/** What up is asked for a rent: its bootstrap and shim, the request's limits, the clean-up of what it made. */
export async function rentAsk(request: Omit<RentRequest, 'signal'>): Promise<UpAsk> {
  const settings = request.run.settings
  return {
    bootstrap: {
      dstackVersion: await settings.get('dstack-version'),
      gpuTest: true,
      idle: {intervalMs: await settings.get('idle-sample-interval'), limitMs: request.idleMs ?? JOB_VM_IDLE_MS},
      pullRetryDelayMs: await settings.get('pull-retry-delay'),
      reinstall: false,
      forceShim: false,
      shim: true,
      shimHealthTimeoutMs: await settings.get('shim-health-timeout'),
      stateWatchIntervalMs: await settings.get('state-watch-interval'),
    },
    capacity: request.waitMs === undefined ? null : {pollFloorMs: await settings.get('capacity-poll-interval'), waitMs: request.waitMs},
    configDir: request.configDir,
    count: request.count ?? 1,
    fleet: request.fleet,
    min: (request.count ?? 1) > 1 ? 1 : undefined,
    gpu: request.gpu,
    image: await settings.get('image'),
    maxCostUsd: request.maxCostUsd,
    maxPrice: request.maxPrice,
    onFailure: 'auto',
    owner: request.owner,
    reconcileMs: request.reconcileMs,
    resource: request.resource ?? undefined,
    timeoutMs: RENT_TIMEOUT_MS,
    ttlMs: request.ttlMs,
  }
}

/** How long the offers are read for, when WORD names a VM and might name an offer too. */
const OFFER_CHECK_MS = 15_000

/** The offers, for refuseIfOffer, read while the VMs are listed; why not, when they could not be read in OFFER_CHECK_MS. */
export async function readOffersToCheck(client: TargonClient, signal: AbortSignal): Promise<Offer[] | {unreadable: string}> {
  try {
    const listing = client.withSignal(AbortSignal.any([signal, AbortSignal.timeout(OFFER_CHECK_MS)]))
    return (await listing.inventory()).offers.map((raw) => normalizeOffer(raw))
  } catch (error) {
    return {unreadable: asTargonError(error).message}
  }
}

/**
 * WORD names a VM, and `targon run` may rent: it must not name an offer too, or a typo of one or the other would rent (or run on)
 * what was not meant. The offer is matched as up matches its resource word. Offers that could not be read (within
 * OFFER_CHECK_MS) are no reason to refuse the VM that WORD names: that is said in a warning, and the run goes on.
 */
export function refuseIfOffer(
  word: string,
  vm: KnownVm,
  offers: Offer[] | {unreadable: string},
  options: {signal: AbortSignal; warn: (message: string) => void},
): void {
  if (options.signal.aborted) throw abortError(options.signal)
  if (!Array.isArray(offers)) {
    options.warn(
      `${word} names ${vm.name ?? vm.uid}; whether it also names an offer is not known (the offers could not be read: ${offers.unreadable}), so the job runs on that VM`,
    )
    return
  }

  const [offer] = matchingOffers(offers, {maxPrice: 0, resource: word})
  if (offer)
    throw usageError(
      `${word} names both the VM ${vm.name ?? vm.uid} and an offer`,
      `targon run ${vm.uid} (its uid) runs on the VM; --gpu ${offer.gpu_model === null ? 'MODEL' : gpuKey(offer.gpu_model)} instead of the word rents a VM of that offer's GPU`,
    )
}
