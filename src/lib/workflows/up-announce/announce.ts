/**
 * `targon up` with what it tells besides its result: the notifications (capacity found, ready, failed or interrupted),
 * the warnings about the VMs it made, and up --dstack. This decides what is told and when; the CLI words it and
 * sends it, through the notify of the run.
 */
import type {TargonClient} from '../../adapters/targon/client.js'
import {EXIT_CODES, asTargonError} from '../../core/errors.js'
import {billingOfTool, readFleet} from '../../domain/fleet/fleet-read.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import {guardCoverage} from '../guard/coverage.js'
import type {RunContext} from '../run-context.js'
import {type DstackAddRun, addToDstack} from '../up/dstack.js'
import type {UpPlanAsk} from '../up/plan.js'
import type {UpResult} from '../up/schema.js'
import type {VmTrack} from '../up/stages.js'
import {type UpOptions, runUp} from '../up/up.js'

/** What a notification of up tells. */
export type UpNotice =
  | {kind: 'capacity-found'; ask: UpPlanAsk}
  | {kind: 'ready'; result: UpResult; owner: string | null; stillBilling: string[]}
  | {kind: 'failed'; error: unknown; owner: string | null}

/** A warning of up that the CLI words. */
export type UpWarning = {kind: 'vm-failed'; failure: UpResult['failed'][number]; rolledBack: boolean} | {kind: 'unguarded'; ask: UpPlanAsk}

/** Who hears of the run besides its result. */
export interface UpAudience {
  /** Whether notifications go out: work only they need is skipped otherwise. */
  notifying(): boolean
  notify(notice: UpNotice): Promise<unknown>
  warn(warning: UpWarning): void
}

/** The workloads this run has got hold of so far (created or adopted), for the lines of an exit without clean-up. */
export class ClaimsSoFar {
  private tracks: readonly VmTrack[] = []

  /** Given to runUp, which hands over its VMs' tracks once it has them. */
  readonly track = (tracks: VmTrack[]): void => {
    this.tracks = tracks
  }

  uids(): string[] {
    return this.tracks.flatMap((track) => (track.claim ? [track.claim.uid] : []))
  }
}

export type AnnouncedRun = RunContext & DstackAddRun

export interface AnnouncedUp {
  ask: UpPlanAsk
  /** up --dstack: the ready VMs go into dstack's fleet. */
  dstack: boolean
  audience: UpAudience
  claims: ClaimsSoFar
  progress?: UpOptions['progress']
  signal: AbortSignal
  trace?: (line: string) => void
}

/** Refusals of an up that got hold of no workload: nothing bills, and a cron line that retries would flood the channel. */
const QUIET_REFUSALS: ReadonlySet<number> = new Set([EXIT_CODES.PRICE_CAP_EXCEEDED, EXIT_CODES.NO_CAPACITY])

export async function upAndAnnounce(run: AnnouncedRun, client: TargonClient, options: AnnouncedUp): Promise<UpResult> {
  const {ask, audience} = options
  let capacityFound: Promise<unknown> | undefined
  // Whether the run got hold of any workload (created or adopted): a run that got none leaves nothing billing.
  let claimedAny = false
  run.events.on((event) => (claimedAny ||= event.vm?.uid !== null && event.vm?.uid !== undefined))
  try {
    const result = await runUp(client, {
      ask: {...ask, configDir: run.settings.dir, reconcileMs: await run.reconcileWindowMs()},
      progress: options.progress,
      run,
      signal: options.signal,
      track: options.claims.track,
      // Once per run: the first VM that waited and found capacity.
      onCapacityFound: () => {
        capacityFound ??= audience.notify({ask, kind: 'capacity-found'})
      },
    })
    const rolledBack = new Set(result.cleanup?.results.filter((deleted) => deleted.billing === false).map((deleted) => deleted.uid))
    for (const failure of result.failed)
      audience.warn({failure, kind: 'vm-failed', rolledBack: failure.uid !== null && rolledBack.has(failure.uid)})
    await capacityFound
    const stillBilling = await stillBillingAfter(run, client, result, ask, audience.notifying())
    await audience.notify({kind: 'ready', owner: ask.owner, result, stillBilling})
    if (await madeUnguarded(run, result)) audience.warn({ask, kind: 'unguarded'})
    if (options.dstack)
      result.dstack_sync = await addToDstack(run, client, {fleet: ask.fleet, org: result.org, owner: ask.owner, trace: options.trace})
    return result
  } catch (error) {
    await capacityFound
    if (claimedAny || !QUIET_REFUSALS.has(asTargonError(error).exitCode)) await audience.notify({error, kind: 'failed', owner: ask.owner})
    throw error
  }
}

/**
 * What of this tool bills in the fleet now, by the org's listing (the VMs of this run and any others), for up-ready's
 * still_billing; read only when a notification goes out. Without a listing: this run's VMs, which bill from now on.
 */
async function stillBillingAfter(
  run: AnnouncedRun,
  client: TargonClient,
  result: UpResult,
  ask: UpPlanAsk,
  notifying: boolean,
): Promise<string[]> {
  const made = result.vms.map((vm) => vm.uid)
  if (!notifying) return made
  try {
    const state = run.localState()
    const view = await readFleet(client, result.org, state, {
      clock: run.clock,
      historyBudget: run.historyBudget,
      readOwners: ask.owner !== null,
    })
    recordFleetRead(state, result.org, view, run.clock)
    return [...new Set([...made, ...billingOfTool(view.vms, ask.fleet, ask.owner)])]
  } catch (error) {
    run.warn(`the notification's still_billing lists only this run's VMs: the listing failed (${(error as Error).message})`)
    return made
  }
}

/**
 * Whether no guard covers the VMs this run made. Covered: a team guard's key went on them, or a guard on this machine
 * sweeps this config directory and profile (a laptop's counts, though it sleeps).
 */
async function madeUnguarded(run: AnnouncedRun, result: UpResult): Promise<boolean> {
  if (!result.vms.some((vm) => !vm.adopted) || result.guard_keys.length > 0) return false
  return guardCoverage(run.settings.dir, (await run.settings.profile()).name, run.warn).kind === null
}
