/**
 * The provisioning of one `targon up` run, what every phase of it shares: the request, the API clients, local state,
 * the candidate offers, and the checks that several phases apply (the price cap, the lookup by
 * name, deleting a claim).
 */

import type {GuardKey} from '../../adapters/ssh/guard-keys.js'
import type {HookSetting} from '../../domain/hooks/hook.js'
import type {IdleSettings} from '../../adapters/bootstrap/idle-config.js'
import type {BootstrapParams} from '../../adapters/bootstrap/remote-call.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {Leftover, OnFailure} from './schema.js'
import {deleteWorkloads} from '../../domain/deletion/delete-workloads.js'
import {forgetVm} from '../../domain/deletion/forget.js'
import {judge} from '../../domain/deletion/lifecycle.js'
import {type HistoryAnswer, classifyByHistory, type HistoryBudget} from '../../domain/deletion/history.js'
import type {Clock} from '../../core/clock.js'
import {TargonError} from '../../core/errors.js'
import {withinCap} from '../../domain/offers/offers.js'
import type {OfferKind} from '../../domain/offers/filter.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type SparseWorkload, type Workload, workloadPrice, workloadStatus} from '../../adapters/targon/schemas.js'
import {pollUntil} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import type {CapacityWatch} from '../../domain/capacity/watch.js'
import type {OfferUnits} from '../../domain/capacity/candidates.js'
import type {RunDeadline} from './deadline.js'
import type {Claim, VmTrack} from './stages.js'
import type {RunEvents} from '../../adapters/events/run-events.js'

/** What the user asked of a run, built once by the command: the request carries it as it is. */
export interface UpAsk extends OfferKind {
  /** The price cap; null only when adopting (--name without a resource or --gpu) without one. */
  maxPrice: number | null
  count: number
  min?: number
  fleet: string
  /** The user's --name (only with --count 1). */
  label?: string
  /** The image asked for; the request carries the one resolved. */
  image: string
  timeoutMs: number
  /** up --wait: how long VMs may wait for capacity, and the floor between two inventory reads; null without --wait. */
  capacity: {waitMs: number; pollFloorMs: number} | null
  ttlMs?: number
  /** up --max-cost: a per-VM budget in USD, kept locally. */
  maxCostUsd?: number
  onFailure: OnFailure
  /** The owner whose project the VMs are created in (a shared org); null: none. */
  owner: string | null
  configDir: string
  /** How long an unclear create or DELETE is reconciled before it is sent again (the reconcile-window setting). */
  reconcileMs: number
  /** null with --no-bootstrap. */
  bootstrap: {
    dstackVersion: string
    reinstall: boolean
    /** up --force-shim: install the pinned shim on a host that dstack owns. */
    forceShim: boolean
    gpuTest: boolean
    pullRetryDelayMs: number
    shim: boolean
    shimHealthTimeoutMs: number
    /** How often the state is read while the bootstrap runs on a VM that is still booting. */
    stateWatchIntervalMs: number
    /** The VM's idle sampler: its interval, and what this run sets of the limit, the user's check and containers. */
    idle: {intervalMs: number; limitMs?: number; check?: string; containers?: boolean}
    /** up --on-delete: the hook to store on the VM; null removes it; undefined keeps what is there. */
    onDelete?: HookSetting | null
  } | null
}

/** The ask, with what the run resolved before the first VM: org, image, key, owner's project, and the bootstrap's settings. */
export interface UpRequest extends Omit<UpAsk, 'bootstrap' | 'owner'> {
  org: string
  /** The image resolved (see resolveImage). */
  image: string
  /** --name without a resource or --gpu: take over the named VM, never rent one of whatever kind is cheapest. */
  adoptOnly: boolean
  /** When the run started (epoch ms): phases report their start relative to it. */
  startedAt: number
  /** How often the state is read while the bootstrap runs on a VM that is still booting. */
  stateWatchIntervalMs: number
  sshKeyUid: string
  /** The org's team guards' keys, added to every VM the run creates (see guard-keys.ts). */
  guardKeys: GuardKey[]
  /** The owner the VMs are created for, and its project; null: none. */
  owner: {name: string; projectId: string} | null
  identityFile: string
  /** null with --no-bootstrap. */
  bootstrap: {params: Omit<BootstrapParams, 'password'>; shim: boolean; idle: IdleSettings; onDelete?: HookSetting | null} | null
}

/** What the phases of one up run share and update, built once by prepare (up.ts) from the command's run context. */
export interface Provisioning {
  request: UpRequest
  /** Cheapest first; empty when nothing may be rented (then `whyNoOffer` says why). */
  candidates: Offer[]
  /** The candidates' units that this run's VMs take (without --wait, which sets units aside itself). */
  units: OfferUnits
  whyNoOffer?: TargonError
  /** Set once Targon refused a VM of this run for the whole org (a quota, credits, the key): nothing more is created. */
  orgRefusal?: TargonError
  client: TargonClient
  /** The same API, not tied to Ctrl-C or the deadline: clean-up must run after an interrupt or a time-out. */
  cleanupClient: TargonClient
  state: LocalState
  /** Aborts on Ctrl-C and other signals, and when the run's --timeout runs out. */
  signal: AbortSignal
  /** The run's --timeout: `deadline.at` is when the whole run must end. */
  deadline: RunDeadline
  /** The time the run reads (the deadline's). */
  clock: Clock
  /** The history reads left to the run (deletion/history.ts). */
  historyBudget: HistoryBudget
  /** With --wait: where VMs wait for capacity; null without. */
  capacity: CapacityWatch | null
  warn: (message: string) => void
  /** The run's event stream: each phase, step and roll-back of each VM. */
  events: RunEvents
  /** The VMs of the run. */
  tracks: VmTrack[]
  /** Registered workloads Targon refused to delete (see deletion/); `down` tries them again. */
  leftovers: Leftover[]
}

/**
 * The price the server bills, checked against the cap. When the server does not say, the price known so far stays,
 * or else the offer's, with a warning; above the cap is PRICE_CAP_EXCEEDED.
 */
export function checkPrice(
  ctx: Provisioning,
  claim: Claim,
  reported: number | undefined,
  known: {previous?: number; offer?: number},
): number {
  if (reported === undefined) {
    if (known.previous !== undefined) return known.previous
    ctx.warn(`the API did not report a price for ${claim.name}; assuming the offer price`)
    return known.offer ?? 0
  }

  if (ctx.request.maxPrice !== null && !withinCap(reported, ctx.request.maxPrice)) {
    throw new TargonError(
      'PRICE_CAP_EXCEEDED',
      `${claim.name} costs ${reported.toFixed(2)} USD/h, above the cap ${ctx.request.maxPrice.toFixed(2)} USD/h`,
      {
        hint: 'raise --max-price or pick a cheaper resource',
        resource: {name: claim.name, uid: claim.uid},
      },
    )
  }

  return reported
}

/** The price in an answer, reading the workload when the answer was sparse. */
export async function serverPrice(ctx: Provisioning, uid: string, answer: SparseWorkload): Promise<number | undefined> {
  return workloadPrice(answer) ?? workloadPrice(await ctx.client.getWorkload(ctx.request.org, uid))
}

/**
 * Live workloads with exactly this name (the server's filter is re-checked here), watching the listing for up to
 * waitMs. Tombstones and registered leftovers that Targon refused to delete here are not VMs to adopt. The
 * clean-up client and no signal serve after an interrupt.
 */
export async function findByName(
  ctx: Provisioning,
  name: string,
  waitMs = 0,
  client = ctx.client,
  // null, not undefined, for "no signal": an explicit undefined would get the default.
  signal: AbortSignal | null = ctx.signal,
): Promise<Workload[]> {
  // A listing that fails is thrown, not waited out: "not found" must never stand in for "could not look".
  const found = await pollUntil(
    async () => {
      const notes = ctx.state.deleteNotes(ctx.request.org)
      // An item that fails the API checks is never adopted (status and down report it).
      const named = (await client.listWorkloads(ctx.request.org, {name})).workloads.filter((workload) => {
        const status = workloadStatus(workload)
        const note = notes.get(workload.uid)
        return workload.name === name && !judge(status, note).gone && !(status === 'registered' && note?.outcome === 'refused')
      })
      // An `error` record no delete note explains may be another directory's tombstone: the server's history tells.
      const unexplained = named.filter((workload) => workloadStatus(workload) === 'error' && !notes.has(workload.uid))
      const history =
        unexplained.length > 0
          ? await classifyByHistory(
              client,
              ctx.state,
              ctx.request.org,
              unexplained.map((workload) => workload.uid),
              {budget: ctx.historyBudget, clock: ctx.clock},
            )
          : new Map<string, HistoryAnswer>()
      const live = named.filter((workload) => history.get(workload.uid)?.kind !== 'deleted')
      return live.length > 0 ? live : undefined
    },
    {clock: ctx.clock, deadline: ctx.clock.now() + waitMs, delayMs: BACKOFF.nameLook, signal: signal ?? undefined, waitOutTrouble: false},
  )
  return found ?? []
}

/**
 * Deletes a claimed workload (confirmed, within the clean-up budget) and, once it no longer bills, its local record.
 * A registered workload that Targon refuses to delete is kept as a leftover, with a warning.
 */
export async function deleteClaim(
  ctx: Provisioning,
  claim: Claim,
  resource: string | null,
): Promise<{billing: boolean; results: DeleteResult[]}> {
  const index = ctx.tracks.find((track) => track.claim?.uid === claim.uid)?.index
  const results = await deleteWorkloads(ctx.cleanupClient, ctx.request.org, ctx.state, [claim], {
    clock: ctx.clock,
    // Its progress is worth a warning; its start and end are the VM's roll-back.
    onEvent: (event) =>
      event.status === 'progress'
        ? ctx.warn(event.detail)
        : ctx.events.emit({...event, type: 'rollback', vm: {...event.vm, index: index === undefined ? null : index + 1}}),
    reconcileMs: ctx.request.reconcileMs,
  })
  const billing = results.some((result) => result.billing !== false)
  for (const result of results.filter((each) => each.action === 'left-registered')) {
    ctx.leftovers.push({name: result.name, resource, uid: result.uid})
    ctx.warn(
      `${result.name ?? result.uid} (${result.uid}) stays registered: Targon refuses to delete a workload that was never deployed; it does not run. targon down retries it; targon down --wake-registered deploys it briefly to delete it`,
    )
  }

  if (!billing) forgetVm(ctx.state, ctx.request.org, claim.uid)
  return {billing, results}
}
