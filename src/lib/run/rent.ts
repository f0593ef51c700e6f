/**
 * A VM for `targon run WORD` when WORD names no VM but an offer (or --gpu names a model): rented exactly as `up`
 * rents one (the price cap, bootstrap and all, its clean-up on failure or interrupt), with an idle limit of 30
 * minutes unless --idle says otherwise, so that it never bills long after its job.
 */
import type {UpResult} from '../contract.js'
import type {RunEvents} from '../events/run-events.js'
import {resolveSetting} from '../settings/settings.js'
import type {TargonClient} from '../targon/client.js'
import {runUp} from '../up/up.js'

/** The idle limit of a VM that run rents, unless --idle says otherwise. */
export const RUN_IDLE_MS = 30 * 60_000
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
  owner: string | null
  configDir: string
  reconcileMs: number
  resolveOrg: (client: TargonClient) => Promise<string>
  events: RunEvents
  signal: AbortSignal
  warn: (message: string) => void
}

export async function rentForJob(client: TargonClient, request: RentRequest): Promise<UpResult> {
  return runUp(client, {
    bootstrap: {
      dstackVersion: await resolveSetting('dstack-version'),
      gpuTest: true,
      idle: {intervalMs: await resolveSetting('idle-sample-interval'), limitMs: request.idleMs ?? RUN_IDLE_MS},
      pullRetryDelayMs: await resolveSetting('pull-retry-delay'),
      reinstall: false,
      shim: true,
      shimHealthTimeoutMs: await resolveSetting('shim-health-timeout'),
      stateWatchIntervalMs: await resolveSetting('state-watch-interval'),
    },
    capacity: request.waitMs === undefined ? null : {pollFloorMs: await resolveSetting('capacity-poll-interval'), waitMs: request.waitMs},
    configDir: request.configDir,
    count: 1,
    events: request.events,
    fleet: request.fleet,
    gpu: request.gpu,
    image: await resolveSetting('image'),
    maxCostUsd: request.maxCostUsd,
    maxPrice: request.maxPrice,
    onFailure: 'auto',
    owner: request.owner,
    reconcileMs: request.reconcileMs,
    resolveOrg: request.resolveOrg,
    resource: request.resource ?? undefined,
    signal: request.signal,
    timeoutMs: RENT_TIMEOUT_MS,
    track: () => undefined,
    ttlMs: request.ttlMs,
    warn: request.warn,
  })
}
