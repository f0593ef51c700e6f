/**
 * `targon sweep` without the rendering: one pass of every limit over every fleet. What it deletes is what
 * `down --expired`, `down --over-cost` and `down --idle` would delete with the same owner rules (it is runDown, with
 * the limits as its last say), so a sweep can never take a VM that `down` would not; what bills under no limit is
 * reported, and the credits are read after the deletions.
 */
import type {DownResult} from '../down/schema.js'
import type {SweepReason, SweepResult} from './schema.js'
import {TargonError, asTargonError, isTargonError} from '../../core/errors.js'
import {createdAt, estimatedCost} from '../../domain/fleet/estimates.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import {type FleetView, type KnownVm, vmPrice} from '../../domain/fleet/fleet-read.js'
import {type DownOptions, runDown} from '../down/down.js'
import {syncCoveredFleets} from '../dstack/sync.js'
import {keepUnlessIdle} from '../down/idle-selection.js'
import {type DownSelection, limitReached, selectionOf} from '../down/selection.js'
import {runCredits} from '../spend/credits.js'
import {type JobsDoneOptions, keepUnlessJobsDone} from '../job/jobs-done.js'
import {readJobs} from '../job/jobs.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {runningJobs} from '../job/running-jobs.js'
import {dueWarnings, unsent, type Warning} from './warnings.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {SWEEP_HOOK_TIMEOUT_CAP_S} from '../../domain/hooks/hook.js'
import type {ListingRun} from '../../domain/fleet/run.js'
import type {DeletionRun} from '../run-context.js'
import type {VmSessions} from '../../domain/fleet/vm-sessions.js'
import {idleLimitOf, limitsOf, readLimitsOnVms, whyLimitsUnknown} from '../../domain/fleet/limits.js'
import {probeUsages} from '../../domain/idle/idle.js'
import type {Usage} from '../../domain/idle/schema.js'

export interface SweepOptions extends Pick<
  DownOptions,
  'configDir' | 'dstack' | 'labelFleet' | 'onEvent' | 'onResult' | 'onTargets' | 'parallel' | 'reconcileMs' | 'connectMs'
> {
  org: string
  dryRun: boolean
  fleet: string | null
  owners: OwnerScope
  overCostUsd: number | null
  idleLimitS: number | null
  minRunwayMs: number | null
  /** --warn: warn of limits that fire within this window; null: off. */
  warnWindowMs: number | null
  /** Whose warnings were sent: kept per config directory and profile. */
  profile: string
  /** Run each VM's pre-delete hook before deleting it (false: --no-hooks). */
  hooks: boolean
  /**
   * Tells of one warning not sent before (never under --dry-run); true once it is delivered (or printed, when no
   * notify URL is set), false when its delivery failed: then it is not marked as sent, and the next sweep warns again.
   */
  sendWarning: (warning: Warning) => Promise<boolean>
  /**
   * Sweep as the org's team guard (guard install --team): every owner's VMs, each by the limits it carries, read over
   * the team guard's key; a VM whose limits cannot be read is reported as not covered, never deleted on a guess.
   */
  team: boolean
  /** --default-ttl: the TTL, from its creation, of a VM whose limits are unknown; null: such VMs are left alone. */
  defaultTtlMs: number | null
  /** The job store's bound, and the one notification of a job whose outputs do not come (see jobs-done.ts). */
  storeLimit: JobsDoneOptions['storeLimit']
  notifyFetchFailing: JobsDoneOptions['notifyFetchFailing']
}

/**
 * Deletes every VM past a limit and reads the runway. Resolves when nothing selected still bills; otherwise throws
 * down's error (PARTIAL_FAILURE, INTERRUPTED) with the sweep's result as its data, the runway read all the same.
 */
export async function runSweep(
  run: DeletionRun,
  client: TargonClient,
  cleanupClient: TargonClient,
  state: LocalState,
  options: SweepOptions,
): Promise<SweepResult> {
  const {clock} = run
  const reasons = new Map<string, SweepReason>()
  let unlimited: SweepResult['unlimited'] = []
  let notCovered: SweepResult['not_covered'] = []
  // What --warn looks at: the VMs of the selection, the idle ones with how long, and every uid listed.
  let scopedVms: KnownVm[] = []
  const idleNow = new Map<string, {idleSeconds: number; limitS: number}>()
  let listed = new Set<string>()
  const narrow = async (chosen: KnownVm[], view: FleetView, sessions: VmSessions) => {
    const live = chosen.filter((vm) => !vm.gone)
    const decided = new Set<string>()
    const decide = (vm: KnownVm) => {
      decided.add(vm.uid)
      const now = clock.now()
      const reason =
        limitReached(vm, now) ??
        (overCost(vm, options.overCostUsd, now) ? 'over-cost' : null) ??
        (pastDefaultTtl(vm, options.defaultTtlMs, now) ? 'ttl' : null)
      if (reason) reasons.set(vm.uid, reason)
    }
    // Only VMs with an idle limit are probed: a clock without a limit decides nothing.
    const idleLimited = (vm: KnownVm) => !reasons.has(vm.uid) && idleLimitOf(vm, options.idleLimitS) !== null
    // The probe's connection also reads each VM's jobs: a run --down job started from any directory is recorded there.
    const downJobOnVm = new Set<string>()
    const alsoRead = async (vm: KnownVm, session: SshSession) => {
      if ((await readJobs(session)).jobs.some((job) => job.record.down)) downJobOnVm.add(vm.uid)
    }
    const probe = {...options, alsoRead, selection: {idle_limit_seconds: options.idleLimitS}, sessions}
    // Each VM's own limits, where this directory can read them (its own VMs; every VM, as the team guard), then at
    // once, over the same connection, its idle clock when its limits leave that to decide.
    const probed = new Map<string, Usage>()
    await readLimitsOnVms(live, sessions, {
      configDir: options.configDir,
      signal: run.signal,
      then: async (vm) => {
        decide(vm)
        if (!idleLimited(vm)) return
        const [usage] = (
          await probeUsages([vm], sessions, {...probe, clock, limitS: options.idleLimitS, parallel: 1, signal: run.signal})
        ).values()
        if (usage) probed.set(vm.uid, usage)
      },
    })
    for (const vm of live) if (!decided.has(vm.uid)) decide(vm)
    const idle = await keepUnlessIdle(run, live.filter(idleLimited), {...probe, probed})
    for (const vm of idle.chosen) reasons.set(vm.uid, 'idle')
    // A run --down job: its VM goes once the job has ended, its outputs fetched first. Known from this directory's
    // record, or from the VM's own jobs when the idle probe read them (every VM `targon run` rents has an idle limit).
    const withDownJob = live.filter((vm) => !reasons.has(vm.uid) && (limitsOf(vm).down_jobs.length > 0 || downJobOnVm.has(vm.uid)))
    const jobsDone = withDownJob.length === 0 ? {chosen: [], kept: []} : await keepUnlessJobsDone(run, withDownJob, options)
    for (const vm of jobsDone.chosen) reasons.set(vm.uid, 'job-done')
    scopedVms = live
    listed = new Set(view.vms.map((vm) => vm.uid))
    for (const kept of idle.kept) {
      const vm = live.find((each) => each.uid === kept.uid) as KnownVm
      const limitS = idleLimitOf(vm, options.idleLimitS)
      const held = Date.parse(limitsOf(vm).idle_hold_until ?? '') > clock.now()
      if (kept.state === 'idle' && kept.idle_seconds !== null && limitS !== null && !held)
        idleNow.set(vm.uid, {idleSeconds: kept.idle_seconds, limitS})
    }
    // Whose limits are unknown (neither a record here nor a file read from the VM) is not covered, never unlimited.
    notCovered = live
      .filter((vm) => limitsOf(vm).source === null && !reasons.has(vm.uid))
      .map((vm) => ({
        name: vm.name,
        owner: vm.owner ?? null,
        reason: whyLimitsUnknown(vm),
        uid: vm.uid,
      }))
    unlimited = [
      ...live.filter((vm) => limitsOf(vm).source !== null && !hasLimit(vm, options)).map((vm) => unlimitedVm(vm, 'targon')),
      ...view.vms.filter((vm) => !vm.owned && !vm.gone && vm.billing !== false).map((vm) => unlimitedVm(vm, 'other')),
    ]
    return {
      chosen: live.filter((vm) => reasons.has(vm.uid)),
      idleUids: new Set(idle.chosen.map((vm) => vm.uid)),
      kept: [...idle.kept, ...jobsDone.kept],
    }
  }

  const selection = sweepSelection(options)
  const sweepOf = (down: DownResult): SweepResult => ({
    dry_run: options.dryRun,
    dstack_sync: null,
    kept: down.kept,
    not_covered: notCovered,
    org: options.org,
    // Every result is of a VM that narrow chose, for its reason, or a listed item that failed the API checks (none).
    results: down.results.map((result) => ({...result, reason: reasons.get(result.uid) ?? null})),
    runway: null,
    warned: [],
    selection: {
      any_owner: options.owners.anyOwner,
      fleet: options.fleet,
      idle_limit_seconds: options.idleLimitS,
      min_runway_hours: options.minRunwayMs === null ? null : options.minRunwayMs / 3_600_000,
      over_cost_usd: options.overCostUsd,
      owner: options.owners.owner,
      team: options.team,
      default_ttl_seconds: options.defaultTtlMs === null ? null : options.defaultTtlMs / 1000,
    },
    skipped: null,
    survivors: down.survivors,
    unlimited,
  })

  let swept: SweepResult
  let failure: TargonError | undefined
  try {
    swept = sweepOf(
      await runDown(run, client, cleanupClient, options.org, state, {
        ...options,
        // The guard runs unattended: its limits are the consent.
        confirm: async () => true,
        ignoreMissing: false,
        hookTimeoutCapS: SWEEP_HOOK_TIMEOUT_CAP_S,
        keepUnlistedRecords: true,
        narrow,
        reasonOf: (vm) => reasons.get(vm.uid) as SweepReason,
        runningJobs: (vm, signal) => runningJobs(vm, {configDir: options.configDir, signal}),
        selection,
        wakeRegistered: false,
      }),
    )
  } catch (error) {
    const partial = isTargonError(error) ? (error.data as DownResult | undefined) : undefined
    if (!partial?.results) throw error
    failure = error as TargonError
    swept = sweepOf(partial)
  }

  // After the deletions, whatever they did: dstack's fleets hold what is left.
  if (options.dstack && !options.dryRun && !run.signal.aborted)
    swept.dstack_sync = await syncCoveredFleets(run, cleanupClient, state, options.dstack.handle, {
      configDir: options.configDir,
      fleet: options.fleet,
      org: options.org,
      owners: options.owners,
    })

  if (options.warnWindowMs !== null && !run.signal.aborted) {
    const gone = new Set(swept.results.filter((result) => result.billing === false).map((result) => result.uid))
    const due = dueWarnings(
      scopedVms.filter((vm) => !gone.has(vm.uid) && !reasons.has(vm.uid)),
      idleNow,
      clock.now(),
      options.warnWindowMs,
      {configDir: options.configDir, owner: options.owners.owner, profile: options.profile},
    )
    if (options.dryRun) swept.warned = due
    else {
      const {fresh, remember} = unsent(options.configDir, options.profile, options.org, due)
      const delivered: Warning[] = []
      for (const warning of fresh) if (await options.sendWarning(warning)) delivered.push(warning)
      try {
        remember(listed, delivered)
      } catch (error) {
        // The record only keeps a warning from being sent twice: failing to write it changes nothing of the run.
        run.warn(`the warnings sent could not be recorded (${asTargonError(error).message}): the next sweep may send them again`)
      }
      swept.warned = fresh
    }
  }

  // An interrupted sweep reads nothing more: its signal said stop.
  if (options.minRunwayMs !== null && !run.signal.aborted) {
    const credits = await runCredits(run, client, state, {
      minRunwayMs: options.minRunwayMs,
      org: options.org,
      owners: options.owners,
    }).catch((error: unknown) => {
      throw isTargonError(error) ? error.with({data: swept}) : error
    })
    swept.runway = {
      burn_usd_per_hour: credits.burn_usd_per_hour,
      credits: credits.credits,
      runway_ends_at: credits.runway_ends_at,
      runway_hours: credits.runway_hours,
      short: credits.short,
    }
  }

  if (failure) throw failure.with({data: swept})
  return swept
}

/** What a sweep asks of down: every fleet (or one), this tool's VMs, the owner rules; its limits narrow it. */
function sweepSelection(options: Pick<SweepOptions, 'fleet' | 'idleLimitS' | 'owners'>): DownSelection {
  return selectionOf(options.owners, {all: options.fleet === null, fleet: options.fleet, idle_limit_seconds: options.idleLimitS})
}

/**
 * Whether a sweep of this org and owner scope would be refused before it deletes anything (VMs of several owners
 * and no owner set): a dry run of its selection, with no limit read and no VM probed. Throws down's refusal.
 */
export async function checkSweepSelection(
  run: ListingRun,
  client: TargonClient,
  state: LocalState,
  options: Pick<SweepOptions, 'configDir' | 'connectMs' | 'labelFleet' | 'org' | 'owners' | 'reconcileMs'>,
): Promise<void> {
  await runDown({...run, signal: new AbortController().signal}, client, client, options.org, state, {
    ...options,
    confirm: async () => true,
    dryRun: true,
    hooks: false,
    ignoreMissing: false,
    narrow: async () => ({chosen: [], kept: []}),
    parallel: 1,
    selection: sweepSelection({fleet: null, idleLimitS: null, owners: options.owners}),
    wakeRegistered: false,
  })
}

/** --default-ttl: a VM whose limits are unknown is past it D after its creation. */
function pastDefaultTtl(vm: KnownVm, defaultTtlMs: number | null, now: number): boolean {
  const created = createdAt(vm)
  return defaultTtlMs !== null && limitsOf(vm).source === null && created !== null && created + defaultTtlMs <= now
}

function overCost(vm: KnownVm, limitUsd: number | null, now: number): boolean {
  return limitUsd !== null && (estimatedCost(vm, now) ?? 0) > limitUsd
}

/** Whether any limit covers the VM: a TTL, a budget, an idle limit, or --over-cost with a price to estimate by. */
function hasLimit(vm: KnownVm, options: SweepOptions): boolean {
  return (
    limitsOf(vm).ttl_expires_at !== null ||
    limitsOf(vm).max_cost_usd !== null ||
    idleLimitOf(vm, options.idleLimitS) !== null ||
    (options.overCostUsd !== null && vmPrice(vm) !== null)
  )
}

function unlimitedVm(vm: KnownVm, origin: 'other' | 'targon'): SweepResult['unlimited'][number] {
  return {name: vm.name, origin, price_per_hour: vmPrice(vm), uid: vm.uid}
}
