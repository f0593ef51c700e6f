/**
 * `targon up` end to end: choose offers under the cap, resolve org, image and SSH key,
 * provision N VMs in parallel, and keep or roll back the fleet (all-or-nothing, or at least --min).
 */

import type {TargonClient} from '../../adapters/targon/client.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {API_IDENTIFIER_PATTERN} from '../../adapters/targon/schemas.js'
import {type ErrorCode, TargonError, asTargonError} from '../../core/errors.js'
import {normalizeOffer} from '../../domain/offers/offers.js'
import {OfferUnits, chooseCandidates, offersUnderCap} from '../../domain/capacity/candidates.js'
import {CapacityWatch} from '../../domain/capacity/watch.js'
import {DEFAULT_IMAGE, SETTINGS} from '../../adapters/settings/table.js'
import {formatDuration} from '../../core/input.js'
import {countOf} from '../../core/output.js'
import {type Rollback, keptNote, rollBack} from './failure-policy.js'
import {vmResult} from './result.js'
import type {Provisioning, UpAsk, UpRequest} from './provisioning.js'
import type {RunContext} from '../run-context.js'
import {RunDeadline} from './deadline.js'
import {VmTrack} from './stages.js'
import {phaseRecorder} from './phase-recorder.js'
import {type PipelineLayout, pipelineLayout, provisionAll} from './pipeline.js'
import type {EventListener} from '../../adapters/events/run-events.js'
import {LocalState} from '../../adapters/state/local-state.js'
import {ensureOwnerProject} from '../../domain/fleet/owners.js'
import {mapBounded} from '../../core/concurrency.js'
import {IDLE_GPU_THRESHOLD_PCT} from '../../adapters/bootstrap/idle-config.js'
import {ensureKeyRegistered} from '../../adapters/ssh/key-registrar.js'
import {ensureProjectKey} from '../../adapters/ssh/project-key.js'
import {teamGuardKeys} from '../../adapters/ssh/guard-keys.js'
import {VERSION} from '../../core/version.js'
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {Cleanup, UpResult} from './schema.js'

export interface UpOptions {
  /** What the user asked for, built once by the command. */
  ask: UpAsk
  /** The run's clock (the deadline, reconciling and back-offs read it), events, warnings and history reads. */
  run: Pick<RunContext, 'clock' | 'events' | 'historyBudget' | 'org' | 'warn'>
  signal: AbortSignal
  /** Lets the signal handler name what this run has created so far. */
  track: (tracks: VmTrack[]) => void
  /** A VM that waited for capacity (--wait) found it. */
  onCapacityFound?: () => void
  /** The progress display, laid out once the run knows its phases, then fed by the events (none under --json). */
  progress?: (layout: PipelineLayout) => Promise<ProgressDisplay>
}

/** A display of the run's progress: an event listener, and the end of its rendering. */
export interface ProgressDisplay {
  listener: EventListener
  finish: () => Promise<void>
}

/** The image by exact name; for the default, a unique Ubuntu 24.04 image if the exact one is missing. */
export async function resolveImage(client: TargonClient, org: string, wanted: string): Promise<string> {
  const names = (await client.listVmImages(org)).map((image) => image.name)
  if (names.includes(wanted)) return wanted
  if (wanted === DEFAULT_IMAGE) {
    // A name picked from the API rather than typed goes into the create request: one plain word only.
    const ubuntu = names.filter((name) => API_IDENTIFIER_PATTERN.test(name) && /ubuntu.*24.*04/i.test(name))
    if (ubuntu.length === 1) return ubuntu[0] as string
  }

  throw new TargonError('USAGE', `image "${wanted}" is not offered`, {
    details: {images: names},
    hint: `use --image with one of: ${names.join(', ')}`,
  })
}

export async function runUp(client: TargonClient, options: UpOptions): Promise<UpResult> {
  // --timeout bounds every request and wait of the run's own work (a server that never answers included), and
  // ends it like an interrupt, as TIMEOUT; waiting for capacity holds it (see deadline.ts). Clean-up runs on a
  // client without this signal, with its own budget.
  const clock = options.run.clock
  const startedAt = clock.now()
  const deadline = new RunDeadline(
    options.ask.timeoutMs,
    startedAt + (options.ask.capacity?.waitMs ?? 0),
    () =>
      new TargonError('TIMEOUT', `targon up did not finish within --timeout ${formatDuration(options.ask.timeoutMs)}`, {
        hint: 'raise --timeout, or check the network',
      }),
    clock,
  )
  // Aborts every VM's phases once a refusal for the whole org (see ORG_REFUSALS) leaves too few VMs for the run.
  const orgRefusal = new AbortController()
  try {
    const signal = AbortSignal.any([options.signal, deadline.signal, orgRefusal.signal])
    const tracks = Array.from({length: options.ask.count}, (_, index) => new VmTrack(index))
    options.track(tracks)
    const ctx = await prepare(client.withSignal(signal), client.withSignal(undefined), signal, deadline, startedAt, tracks, options)
    const failures = await provision(ctx, tracks, options, (error) => orgRefusal.abort(error))
    try {
      return await keepOrRollBack(ctx, tracks, failures, options)
    } finally {
      for (const track of tracks) track.closeSsh()
    }
  } finally {
    deadline.dispose()
  }
}

/** Everything the phases need before the first VM is created: offers under the cap, org, image and the project key. */
async function prepare(
  client: TargonClient,
  cleanupClient: TargonClient,
  signal: AbortSignal,
  deadline: RunDeadline,
  startedAt: number,
  tracks: VmTrack[],
  options: UpOptions,
): Promise<Provisioning> {
  const {ask} = options
  const inventory = await client.inventory()
  const readAt = deadline.clock.now()
  // Only adopting needs no cap: then nothing can be rented.
  const cap = ask.maxPrice ?? 0
  const wanted = {...ask, maxPrice: cap}
  const offers = inventory.offers.map((raw) => normalizeOffer(raw, cap))
  // With --name the VM may already exist, and with --wait capacity may come: a missing offer only matters once
  // something must be created.
  let candidates: Offer[] = []
  let whyNoOffer: TargonError | undefined
  try {
    candidates = chooseCandidates(offers, wanted)
  } catch (error) {
    const waitable = ask.capacity !== null && offersUnderCap(offers, wanted).length > 0
    if ((ask.label === undefined && !waitable) || !(error instanceof TargonError)) throw error
    whyNoOffer = error
  }

  // The org is decided once the offers are known.
  const org = await options.run.org(client)
  const state = new LocalState(ask.configDir)
  const key = await ensureProjectKey(ask.configDir)
  const adoptOnly = ask.resource === undefined && ask.gpu === undefined
  const request: UpRequest = {
    ...ask,
    adoptOnly,
    bootstrap: ask.bootstrap && bootstrapSettings(ask.bootstrap),
    identityFile: key.privateKeyPath,
    image: await resolveImage(client, org, ask.image),
    org,
    owner: ask.owner === null ? null : {name: ask.owner, projectId: await ensureOwnerProject(client, org, ask.owner, ask.reconcileMs)},
    sshKeyUid: await ensureKeyRegistered(client, org, state, key, deadline.clock),
    // Read once per run, for every VM it creates; adopting creates none.
    guardKeys: adoptOnly ? [] : await teamGuardKeys(client, org, options.run.warn),
    startedAt,
    // Read only while a bootstrap runs; without one, any value does.
    stateWatchIntervalMs: ask.bootstrap?.stateWatchIntervalMs ?? SETTINGS['state-watch-interval'].default,
  }
  const capacity =
    ask.capacity &&
    new CapacityWatch(client, {
      clock: deadline,
      floorMs: ask.capacity.pollFloorMs,
      offers,
      readAt,
      signal,
      until: deadline.waitUntil,
      waitMs: ask.capacity.waitMs,
      wanted,
      onFound: () => {
        options.run.events.emit({detail: 'capacity found under the cap', status: 'progress', type: 'progress'})
        options.onCapacityFound?.()
      },
    })
  return {
    candidates,
    units: new OfferUnits(candidates),
    capacity,
    cleanupClient,
    client,
    clock: deadline.clock,
    deadline,
    events: options.run.events,
    historyBudget: options.run.historyBudget,
    leftovers: [],
    request,
    signal,
    state,
    tracks,
    warn: options.run.warn,
    whyNoOffer,
  }
}

/** What the bootstrap of each VM is given, from what was asked of it. */
function bootstrapSettings(asked: NonNullable<UpAsk['bootstrap']>): NonNullable<UpRequest['bootstrap']> {
  const {idle} = asked
  return {
    idle: {
      check: idle.check,
      containers: idle.containers,
      interval_s: idle.intervalMs / 1000,
      limit_s: idle.limitMs === undefined ? undefined : idle.limitMs / 1000,
      threshold_pct: IDLE_GPU_THRESHOLD_PCT,
    },
    onDelete: asked.onDelete,
    params: {
      dstackVersion: asked.dstackVersion,
      gpuTest: asked.gpuTest,
      pullRetryDelayMs: asked.pullRetryDelayMs,
      reinstall: asked.reinstall,
      forceShim: asked.forceShim,
      shimHealthTimeoutMs: asked.shimHealthTimeoutMs,
      toolVersion: VERSION,
    },
    shim: asked.shim,
  }
}

/** Refusals that hold for every VM of the org: after one, the run creates nothing more. */
const ORG_REFUSALS: ReadonlySet<ErrorCode> = new Set(['AUTH', 'INSUFFICIENT_CREDITS', 'QUOTA_EXCEEDED'])

/** A VM whose phases failed: the first error (the cause), and its roll-back, started as soon as it failed. */
interface Failure {
  error: unknown
  rollback: Promise<Rollback>
}

/**
 * Runs the phases of every VM (pipeline.ts); returns how each VM that failed failed. A failed VM is
 * rolled back at once rather than when the whole run ends: the others may still wait for capacity for hours, and a
 * failed VM would bill meanwhile. Once failures leave too few VMs for --count (or --min), waiting for capacity stops.
 */
async function provision(
  ctx: Provisioning,
  tracks: VmTrack[],
  options: UpOptions,
  stopAll: (error: TargonError) => void,
): Promise<Map<VmTrack, Failure>> {
  const failures = new Map<VmTrack, Failure>()
  const allowed = options.ask.count - (options.ask.min ?? options.ask.count)
  const fail = (track: VmTrack, error: unknown) => {
    // The first error is the cause: a phase alongside it ends with the same one, or with a consequence of it.
    if (failures.has(track)) return
    const cause = asTargonError(error)
    track.failedWith = cause.code
    ctx.capacity?.release(track)
    const rollback = rollBack(ctx, track)
    rollback.catch(() => undefined)
    failures.set(track, {error, rollback})
    if (ORG_REFUSALS.has(cause.code) && !ctx.orgRefusal) {
      // No VM of the run creates anything more, nor waits for capacity; those created go on unless the run is lost.
      ctx.orgRefusal = cause
      ctx.capacity?.stop(cause)
    }

    if (failures.size > allowed && ctx.orgRefusal && !ctx.signal.aborted) stopAll(ctx.orgRefusal)
    if (failures.size > allowed && !ctx.signal.aborted) {
      const needed = options.ask.min === undefined ? `all ${options.ask.count}` : `--min ${options.ask.min}`
      ctx.capacity?.stop(
        new TargonError(
          'NO_CAPACITY',
          `stopped waiting for capacity: ${countOf(failures.size, 'VM')} failed, so ${needed} can no longer come up`,
          {
            hint: 'see data.failed for the causes',
          },
        ),
      )
    }
  }

  const layout = pipelineLayout(ctx.request, options.ask.count)
  ctx.events.on(phaseRecorder(tracks, ctx.request.startedAt, layout))
  const display = await options.progress?.(layout)
  if (display) ctx.events.on(display.listener)
  try {
    await provisionAll(ctx, tracks, fail)
  } finally {
    await display?.finish()
  }

  return failures
}

/** Keeps the fleet, or rolls it back per --on-failure when it fell short. */
async function keepOrRollBack(
  ctx: Provisioning,
  tracks: VmTrack[],
  failures: Map<VmTrack, Failure>,
  options: UpOptions,
): Promise<UpResult> {
  const interrupted = options.signal.aborted
  const failed = tracks.filter((track) => failures.has(track) || interrupted)
  const succeeded = tracks.filter((track) => !failed.includes(track))
  const keepPartial = !interrupted && options.ask.min !== undefined && succeeded.length >= options.ask.min
  const toRollBack = failed.length === 0 ? [] : keepPartial ? failed : tracks

  // Roll back in parallel, as many at once as any deletion: a fleet's clean-up should not take N times one.
  const outcomes = await mapBounded(toRollBack, MAX_MUTATIONS_IN_FLIGHT, (track) => failures.get(track)?.rollback ?? rollBack(ctx, track))
  const attempted = outcomes.some((outcome) => outcome.attempted)
  const results: DeleteResult[] = outcomes.flatMap((outcome) => outcome.results)
  const cleanup: Cleanup | null =
    toRollBack.length === 0
      ? null
      : {attempted, results, survivors: results.filter((result) => result.billing !== false).map((result) => result.uid)}
  const failedResults = failed.map((track) => {
    const error = asTargonError(failures.get(track)?.error ?? options.signal.reason)
    return {error: {code: error.code, message: error.message}, name: track.claim?.name ?? null, uid: track.claim?.uid ?? null}
  })
  const result: UpResult = {
    capacity_wait_s: Math.round(ctx.deadline.waitedMs / 100) / 10,
    cleanup,
    failed: failedResults,
    guard_keys: ctx.request.guardKeys,
    leftovers: ctx.leftovers,
    org: ctx.request.org,
    owner: options.ask.owner,
    vms: (keepPartial || failed.length === 0 ? succeeded : []).map((track) => vmResult(ctx, track)),
  }
  const kept = keptNote(
    toRollBack.flatMap((track, index) => (track.claim && !outcomes[index]?.attempted ? [track.claim] : [])),
    options.ask.onFailure,
  )
  if (keepPartial && kept) options.run.warn(kept)
  if (failed.length === 0 || keepPartial) return result

  const data = {...result, vms: tracks.map((track) => vmResult(ctx, track))} as unknown as Record<string, unknown>
  const first = asTargonError(failures.get(failed[0] as VmTrack)?.error ?? options.signal.reason)
  const sameCause = failedResults.every((failure) => failure.error.code === first.code)
  const orgWide = failed.map((track) => asTargonError(failures.get(track)?.error)).find((cause) => ORG_REFUSALS.has(cause.code))
  const error = interrupted
    ? asTargonError(options.signal.reason)
    : (orgWide ??
      (options.ask.count === 1 || (sameCause && succeeded.length === 0)
        ? first
        : partialFailure(failedResults.length, options.ask.count, succeeded.length)))
  error.data = data
  const notes = [
    kept,
    cleanup && cleanup.survivors.length > 0
      ? `still present after clean-up: ${cleanup.survivors.join(', ')}; run targon down ${cleanup.survivors.join(' ')}`
      : undefined,
  ].filter((note) => note !== undefined)
  if (notes.length > 0) throw error.with({data, message: `${error.message}; ${notes.join('; ')}`})
  throw error
}

function partialFailure(failedCount: number, count: number, succeededCount: number): TargonError {
  const rolledBack =
    succeededCount === 0
      ? ''
      : succeededCount === 1
        ? '; the one that succeeded was rolled back'
        : `; the ${succeededCount} that succeeded were rolled back`
  return new TargonError('PARTIAL_FAILURE', `${failedCount} of ${countOf(count, 'VM')} failed${rolledBack}`, {
    hint: 'see data.failed for the causes; pass --min K to keep a partial fleet',
  })
}
