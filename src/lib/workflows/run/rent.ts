/**
 * A VM for `targon run WORD` when WORD names no VM but an offer (or --gpu names a model): rented exactly as `up`
 * rents one (the price cap, bootstrap and all, its clean-up on failure or interrupt), with an idle limit of 30
 * minutes unless --idle says otherwise, so that it never bills long after its job.
 */
import type {RunContext} from '../run-context.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import type {UpResult} from '../up/schema.js'
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
  /** The run's settings, clock, events, warnings and history reads. */
  run: RunContext
  signal: AbortSignal
}

export async function rentForJob(client: TargonClient, request: RentRequest): Promise<UpResult> {
  const settings = request.run.settings
  return runUp(client, {
    ask: {
      bootstrap: {
        dstackVersion: await settings.get('dstack-version'),
        gpuTest: true,
        idle: {intervalMs: await settings.get('idle-sample-interval'), limitMs: request.idleMs ?? RUN_IDLE_MS},
        pullRetryDelayMs: await settings.get('pull-retry-delay'),
        reinstall: false,
        shim: true,
        shimHealthTimeoutMs: await settings.get('shim-health-timeout'),
        stateWatchIntervalMs: await settings.get('state-watch-interval'),
      },
      capacity: request.waitMs === undefined ? null : {pollFloorMs: await settings.get('capacity-poll-interval'), waitMs: request.waitMs},
      configDir: request.configDir,
      count: 1,
      fleet: request.fleet,
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
    },
    resolveOrg: request.resolveOrg,
    run: request.run,
    signal: request.signal,
    track: () => undefined,
  })
}
