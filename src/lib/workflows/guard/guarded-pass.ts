/**
 * One sweep as a schedule runs it: under its lock (one sweep at a time per config directory and profile), recorded for
 * `guard status` when it is the guard's, and followed by its heartbeat. What is optional here (the heartbeat, the
 * record of a pass that failed before its lock, the notifications the command sends) never stops or changes a
 * deletion: a failure of theirs is a warning, and the pass ends as it would have.
 */
import {join} from 'node:path'

import type {SweepRequest} from '../sweep/request.js'
import type {SweepResult} from '../sweep/schema.js'
import {type SweepOptions, runSweep} from '../sweep/sweep.js'
import type {RunContext} from '../run-context.js'
import {openLeave} from '../dstack/leave.js'
import {storeLimit} from '../job/job-store.js'
import {recordPass, rotateLog} from './passes.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {ping} from '../../adapters/notify/heartbeat.js'
import {hasGuardKey} from '../../adapters/ssh/project-key.js'
import {DEFAULT_PROFILE} from '../../adapters/settings/store.js'
import {ifFileLockFree} from '../../adapters/state/lock.js'
import {childPath} from '../../adapters/state/paths.js'
import {ensureConfigDir} from '../../adapters/state/trust.js'
import {TargonError, asTargonError, isTargonError} from '../../core/errors.js'
import {formatDuration} from '../../core/input.js'
import {usd} from '../../core/output.js'

/** What is known of a pass before its request is read: enough to ping and record a pass that fails at once. */
export interface PassOptions {
  /** The guard's pass (--guard): recorded for guard status, the guard's log rotated. */
  guard: boolean
  /** A dry run pings no heartbeat: it is not the guard at work. */
  dryRun: boolean
  /** --heartbeat-url, over the environment and the config file. */
  heartbeatFlag: string | undefined
  /** Where HTTP traces of the dstack server go (--verbose). */
  trace?: (line: string) => void
}

/** What the command supplies: its request, its API client, and where the pass's progress and outcome go. */
export interface PassListeners extends Pick<SweepOptions, 'notifyFetchFailing' | 'onEvent' | 'onResult' | 'onTargets' | 'sendWarning'> {
  /** The request, from the flags and the settings: what fails here (a usage error, a bad setting) fails before the lock. */
  request(): Promise<SweepRequest>
  /** Once the request is checked, before the lock: the notify URL is taken (a refused one is a warning). */
  takeNotifyUrl(): Promise<void>
  /** Runs the work with a client of the API, closed afterwards. */
  withClient<R>(work: (client: TargonClient) => Promise<R>): Promise<R>
  /** Progress for stderr. */
  info(line: string): void
  /**
   * A sweep that got as far as its results (all, or those of a failed run): to report and show. `exitCode` is the
   * pass's; `runwayShort`, the error a short runway ends it with.
   */
  finished(result: SweepResult, exitCode: number, runwayShort: TargonError | undefined): Promise<void>
}

/**
 * Runs one sweep under its lock, or skips it when another sweep of the directory and profile holds it; records the
 * guard's pass, and pings the heartbeat on exit (URL/fail for an exit other than 0 or 14, a skip pings nothing).
 */
export async function guardedPass(run: RunContext, pass: PassOptions, listeners: PassListeners): Promise<SweepResult> {
  const startedAt = run.clock.now()
  const recorded = {done: false}
  try {
    // Resolved first, so that a pass failing before its lock (a bad fleet, owner or config) still pings URL/fail.
    const heartbeat = await heartbeatUrl(run, pass.heartbeatFlag)
    const beat = async (exitCode: number) => {
      if (heartbeat === undefined || pass.dryRun) return
      const warning = await ping(heartbeat, exitCode)
      if (warning) run.warn(warning)
    }

    try {
      const result = await lockedPass(run, pass, listeners, () => (recorded.done = true))
      if (result.skipped === null) await beat(0)
      return result
    } catch (error) {
      await beat(asTargonError(error).exitCode)
      throw error
    }
  } catch (error) {
    if (pass.guard && !recorded.done) await recordEarlyFailure(run, startedAt, asTargonError(error).exitCode)
    throw error
  }
}

/**
 * The ping URL, when one is set and taken. A refused one (not https, say) is a warning that names where it came
 * from, never the URL, and the pass runs without a heartbeat: a ping is optional, the deletions are not.
 */
async function heartbeatUrl(run: Pick<RunContext, 'settings' | 'warn'>, flag: string | undefined): Promise<string | undefined> {
  try {
    return await run.settings.get('heartbeat-url', flag)
  } catch (error) {
    if (!isTargonError(error)) throw error
    run.warn(`${error.message}: this run pings no heartbeat${error.hint ? ` (${error.hint})` : ''}`)
    return undefined
  }
}

/**
 * A guard's pass that failed before its lock (a bad config, owner, profile or heartbeat URL) is recorded too, so that
 * guard status says the last sweep exited N rather than that none ran. Recording is best effort: the exit code stands.
 */
async function recordEarlyFailure(run: RunContext, startedAt: number, exitCode: number): Promise<void> {
  try {
    const profile = await run.settings
      .profile()
      .then((active) => active.name)
      .catch(() => DEFAULT_PROFILE)
    recordPass(ensureConfigDir(run.settings.dir), profile, {
      at: new Date(startedAt).toISOString(),
      deleted: 0,
      duration_ms: run.clock.now() - startedAt,
      exit_code: exitCode,
      skipped: false,
      still_billing: 0,
    })
  } catch (error) {
    run.warn(`this run could not be recorded for guard status (${asTargonError(error).message})`)
  }
}

/** The sweep under its lock, or the skip when another holds it; `recording` is told once the pass is being recorded. */
async function lockedPass(run: RunContext, pass: PassOptions, listeners: PassListeners, recording: () => void): Promise<SweepResult> {
  const request = await listeners.request()
  if (request.team && !hasGuardKey(run.settings.dir))
    throw new TargonError('CONFIG', `${run.settings.dir} has no team guard key`, {
      hint: 'targon guard install --team makes it, registers it with the org and schedules the sweep',
    })
  await listeners.takeNotifyUrl()
  const profile = (await run.settings.profile()).name
  const dir = ensureConfigDir(run.settings.dir)
  const startedAt = run.clock.now()
  const record = (exitCode: number, result: SweepResult | undefined) => {
    if (!pass.guard) return
    recording()
    recordPass(dir, profile, {
      at: new Date(startedAt).toISOString(),
      deleted: result?.results.filter((each) => each.action === 'deleted' || each.action === 'woken-and-deleted').length ?? 0,
      duration_ms: run.clock.now() - startedAt,
      exit_code: exitCode,
      skipped: typeof result?.skipped === 'string',
      still_billing: result?.survivors.length ?? 0,
    })
  }

  if (pass.guard) rotateLog(dir, profile)
  const lock = childPath(join(dir, 'locks'), `sweep-${profile}`, '.lock')
  const outcome = await ifFileLockFree(
    lock,
    async () => {
      try {
        const result = await sweep(run, request, profile, pass.trace, listeners)
        record(0, result)
        return result
      } catch (error) {
        const failure = asTargonError(error)
        record(failure.exitCode, failure.data as SweepResult | undefined)
        throw error
      }
    },
    run.warn,
  )
  if (outcome.ran) return outcome.value
  const skipped = `another sweep of ${dir} (profile ${profile}) is running; this one does nothing`
  listeners.info(skipped)
  const result = skippedResult(request, skipped)
  record(0, result)
  return result
}

/** One sweep over the API, its results handed to `finished`; a short runway ends it with RUNWAY_SHORT (14). */
async function sweep(
  run: RunContext,
  request: SweepRequest,
  profile: string,
  trace: PassOptions['trace'],
  listeners: PassListeners,
): Promise<SweepResult> {
  const dstack = request.dryRun ? undefined : await openLeave(run, false, trace)
  return listeners.withClient(async (client) => {
    const org = await run.org(client)
    let result: SweepResult
    try {
      result = await runSweep(run, client, client.withSignal(undefined), run.localState(), {
        configDir: run.settings.dir,
        dryRun: request.dryRun,
        dstack,
        fleet: request.fleet,
        hooks: request.hooks,
        idleLimitS: request.idleLimitMs === null ? null : request.idleLimitMs / 1000,
        labelFleet: await run.settings.get('fleet'),
        minRunwayMs: request.minRunwayMs,
        profile,
        warnWindowMs: request.warnWindowMs,
        onEvent: listeners.onEvent,
        onResult: listeners.onResult,
        onTargets: listeners.onTargets,
        org,
        overCostUsd: request.overCostUsd,
        owners: request.owners,
        parallel: request.parallel,
        team: request.team,
        defaultTtlMs: request.defaultTtlMs,
        reconcileMs: await run.reconcileWindowMs(),
        connectMs: await run.sshConnectMs(),
        sendWarning: listeners.sendWarning,
        storeLimit: storeLimit(await run.settings.get('job-store-limit')),
        notifyFetchFailing: listeners.notifyFetchFailing,
      })
    } catch (error) {
      const partial = isTargonError(error) ? (error.data as SweepResult | undefined) : undefined
      if (partial?.results) await listeners.finished(partial, (error as TargonError).exitCode, undefined)
      throw error
    } finally {
      await dstack?.handle.client.close()
    }

    const runwayShort = result.runway?.short === true ? runwayShortError(org, result) : undefined
    await listeners.finished(result, runwayShort?.exitCode ?? 0, runwayShort)
    if (runwayShort) throw runwayShort
    return result
  })
}

/** The credits of the org last less than --min-runway: the sweep's result goes with the error. */
function runwayShortError(org: string, result: SweepResult): TargonError {
  const runway = formatDuration((result.runway?.runway_hours ?? 0) * 3_600_000)
  const minimum = formatDuration((result.selection.min_runway_hours ?? 0) * 3_600_000)
  return new TargonError(
    'RUNWAY_SHORT',
    `the credits of ${org} last about ${runway} at ${usd(result.runway?.burn_usd_per_hour ?? 0)} USD/h, less than ${minimum}`,
    {data: result, hint: 'add credits, or delete what you do not need: targon down'},
  )
}

/** The result of a sweep that did nothing, another one holding the lock. */
function skippedResult(request: SweepRequest, skipped: string): SweepResult {
  return {
    dry_run: request.dryRun,
    dstack_sync: null,
    kept: [],
    not_covered: [],
    org: null,
    results: [],
    runway: null,
    selection: {
      any_owner: request.owners.anyOwner,
      fleet: request.fleet,
      idle_limit_seconds: request.idleLimitMs === null ? null : request.idleLimitMs / 1000,
      min_runway_hours: request.minRunwayMs === null ? null : request.minRunwayMs / 3_600_000,
      over_cost_usd: request.overCostUsd,
      owner: request.owners.owner,
      team: request.team,
      default_ttl_seconds: request.defaultTtlMs === null ? null : request.defaultTtlMs / 1000,
    },
    skipped,
    survivors: [],
    unlimited: [],
    warned: [],
  }
}
