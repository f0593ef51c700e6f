/**
 * Deleting workloads until they no longer bill, as Targon really behaves (lifecycle.ts says what
 * gone means). Used by `down` and by every roll-back of `up`.
 *
 * - One DELETE per workload at a time, across this run and every other run on this machine (a
 *   lock keyed by org and uid): Targon answers a DELETE only once the teardown is done, which can
 *   take minutes, and a second DELETE meanwhile can do harm.
 * - A 204 is noted durably (so later runs know that the `error` record that follows is a
 *   tombstone), then confirmed by watching the state.
 * - A 500 on a registered, suspended or crashed workload is Targon refusing: a suspended or crashed
 *   one bills, so it is deployed, waited for, and deleted ("wake-then-delete"); a registered one does
 *   not run, so it is left (and noted) unless the caller asks to wake it too.
 * - An unclear answer (lost, timed out, 5xx on a running VM) is settled by watching the state; the
 *   DELETE is sent once more only when the VM still runs minutes later.
 */

import type {TargonClient} from '../../adapters/targon/client.js'
import {mapBounded} from '../../core/concurrency.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {workloadStatus} from '../../adapters/targon/schemas.js'
import {TargonError} from '../../core/errors.js'
import {HALTED, type ObservedStatus, TRANSITIONAL, judge, needsWake} from './lifecycle.js'
import {deleteLockPath, withFileLock} from '../../adapters/state/lock.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import {apiTrouble, isOutcomeUnknown, pollUntil} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import type {Clock} from '../../core/clock.js'
import {type Look, reconcile} from '../../core/reconcile.js'
import type {DeleteAction, DeleteResult} from './schema.js'
import type {EndedJob, HookOutcome} from '../../adapters/events/schema.js'
import {type EventVm, vmRef} from '../../adapters/events/run-events.js'
import {recordStart, recordStop} from '../ledger/ledger.js'
import type {VmFacts} from '../ledger/schema.js'

export interface DeleteTarget {
  uid: string
  name: string | null
  /** The status last seen (e.g. in the listing); read afresh when missing. */
  status?: ObservedStatus
  /** What the spend ledger keeps of it, should a wake-up start its billing (the listing's; the name alone without). */
  facts?: VmFacts
  /** The API's created_at, where the listing gave it: when a crashed VM's billing began, for the ledger. */
  createdAt?: string | null
  /**
   * A deploy of it was sent and never answered (the run was interrupted, or the answer was lost): while registered, it
   * is watched a third of the reconcile window (as a DELETE answered 5xx is) before it is called a leftover, since
   * that deploy may still start its billing.
   */
  deployUnsettled?: boolean
}

/** Everything one VM's deletion may take, a wake-then-delete included. Not bounded by `up --timeout`. */
export const CLEANUP_BUDGET_MS = 15 * 60_000
/** How long a deletion is watched after Targon accepted it. */
const CONFIRM_MS = 5 * 60_000
/**
 * After an unclear answer, how long the state is watched before the DELETE is sent again: after an answer that never
 * came (the teardown may still be running, and Targon answers only once it is done), two minutes; after one that
 * came back as a 5xx or a reset, a third of the reconcile window (TARGON_RECONCILE_WINDOW; 10 s by default): most
 * often nothing was deleted, and the VM bills meanwhile.
 */
const RESEND_AFTER_MS = 2 * 60_000
/** How long a woken VM may take to run again. */
const WAKE_MS = 10 * 60_000
/** Still up, or on the way: a DELETE may yet take effect, so these are watched rather than answered. */
const RUNNING: ReadonlySet<ObservedStatus> = new Set(['running', 'provisioning', ...TRANSITIONAL])

export interface DeleteOptions {
  concurrency?: number
  /** Per VM; default CLEANUP_BUDGET_MS. */
  budgetMs?: number
  /** Also deploy registered leftovers briefly, so that Targon deletes them. */
  wakeRegistered?: boolean
  /** Once aborted, no further deletion starts; those under way finish within their budget. */
  stop?: AbortSignal
  onResult?: (result: DeleteResult) => void
  /**
   * Each deletion's course: started, progress worth a line (waiting for another run, waking the VM, a DELETE sent
   * again), then done (it no longer bills) or failed.
   */
  onEvent?: (event: DeletionEvent) => void
  /** The reconcile window (see the setting): a DELETE answered 5xx or reset is watched a third of it before it is sent again. */
  reconcileMs: number
  /** The time budgets, watches and back-offs read; the real one unless a test fakes it. */
  clock: Clock
}

export interface DeletionEvent {
  vm: EventVm
  status: 'done' | 'failed' | 'progress' | 'started'
  detail: string
  duration_ms?: number
  /** What the VM's pre-delete hook did, on the progress event that ends it. */
  hook?: HookOutcome
  /** The jobs of targon run that the deletion ended, on its done event (down and sweep add them). */
  ended_jobs?: EndedJob[]
}

export async function deleteWorkloads(
  client: TargonClient,
  org: string,
  state: LocalState,
  targets: DeleteTarget[],
  options: DeleteOptions,
): Promise<DeleteResult[]> {
  const unique = [...new Map(targets.map((target) => [target.uid, target])).values()]
  return mapBounded(unique, options.concurrency ?? MAX_MUTATIONS_IN_FLIGHT, async (target) => {
    const result = options.stop?.aborted
      ? notAttempted(target, state.readDeleteNote(org, target.uid))
      : await new Deletion(client, org, state, target, options).run()
    options.onResult?.(result)
    return result
  })
}

function notAttempted(target: DeleteTarget, note: ReturnType<LocalState['readDeleteNote']>): DeleteResult {
  const billing = target.status === undefined ? true : (judge(target.status, note).billing ?? true)
  return {action: 'not-attempted', billing, error: 'interrupted before its deletion started', name: target.name, uid: target.uid}
}

/** What Targon said to one DELETE (an unclear answer is reconciled, anything else thrown). */
type DeleteAnswer = 'accepted' | 'in-progress' | 'not-found' | 'refused'

class Deletion {
  private readonly deadline: number
  private readonly clock: Clock
  private woken = false
  private sends = 0
  /** The HTTP 500 that refused the last DELETE. */
  private refusal: TargonError | undefined
  /** An `error` after a refused DELETE of a running VM was sent one more DELETE (refused()). */
  private probedError = false

  constructor(
    private readonly client: TargonClient,
    private readonly org: string,
    private readonly state: LocalState,
    private readonly target: DeleteTarget,
    private readonly options: DeleteOptions,
  ) {
    this.clock = options.clock
    this.deadline = this.clock.now() + (options.budgetMs ?? CLEANUP_BUDGET_MS)
  }

  async run(): Promise<DeleteResult> {
    const startedAt = this.clock.now()
    this.say('started', `deleting ${this.label()}`)
    const result = await this.deleteUnderLock()
    // This run stopped its billing (what was gone already, the listing ends in the ledger).
    if (!result.billing && (result.action === 'deleted' || result.action === 'woken-and-deleted'))
      this.unrecorded(recordStop(this.state.dir, this.org, this.target.uid, this.clock.now()))
    this.say(
      result.billing ? 'failed' : 'done',
      `${this.label()}: ${result.action}${result.error ? ` (${result.error})` : ''}`,
      this.clock.now() - startedAt,
    )
    return result
  }

  private async deleteUnderLock(): Promise<DeleteResult> {
    try {
      return await withFileLock(deleteLockPath(this.org, this.target.uid, this.state.dir), (waited) => this.start(waited), {
        onWait: () => this.say('progress', `${this.label()}: another targon run is deleting it; waiting for that`),
        timeoutMs: this.deadline - this.clock.now(),
      })
    } catch (error) {
      // Whatever went wrong (the API, or the local lock directory), the other deletions go on and this one is reported.
      return this.result('failed', true, error instanceof Error ? error.message : String(error))
    }
  }

  private say(status: DeletionEvent['status'], detail: string, durationMs?: number): void {
    this.options.onEvent?.({detail, duration_ms: durationMs, status, vm: vmRef(this.target.uid, this.target.name)})
  }

  private async start(waited: boolean): Promise<DeleteResult> {
    // After waiting for another run, what the listing said is stale.
    const status = waited || this.target.status === undefined ? await this.read() : this.target.status
    if (status === undefined) return this.result('failed', true, 'the API did not tell its state')
    const note = this.state.readDeleteNote(this.org, this.target.uid)
    if (judge(status, note).gone) return this.result('already-gone', false)
    // Our own DELETE was accepted moments ago (an earlier attempt or run): watch it, do not send another.
    if (note?.outcome === 'accepted' && this.clock.now() - Date.parse(note.at) < RESEND_AFTER_MS && !needsWake(status))
      return this.confirm('deleted')
    return this.deleteOnce(status)
  }

  /**
   * Sends a DELETE and follows what Targon answered. An unclear answer (lost, a reset, a 5xx; or `unclear`, an
   * earlier one) may have been applied: the state is watched before the DELETE is sent again.
   */
  private async deleteOnce(before: ObservedStatus, unclear?: TargonError): Promise<DeleteResult> {
    const sentBefore = this.sends
    let last: ObservedStatus | undefined
    const outcome = await reconcile<DeleteAnswer, ObservedStatus>(
      {
        classify: (error) => (isOutcomeUnknown(error) ? 'unclear' : 'fatal'),
        look: async (): Promise<Look<ObservedStatus>> => {
          last = await this.readOnce()
          if (last === 'not-found' || last === 'deleted') return {observed: last}
          // Sent again once the state no longer moves (no DELETE of it is in flight: the last one answered): for an
          // `error` record the answer tells a tombstone (204) from a crash (500).
          return RUNNING.has(last) ? 'watch' : 'send-again'
        },
        lookDelay: BACKOFF.deletionLook,
        lookTrouble: apiTrouble,
        onResend: () =>
          this.say('progress', `${this.label()}: still ${last ?? 'present'} after an unclear DELETE answer; sending it again`),
        send: () => this.send(),
        // After an answer that never came, the teardown may still be running (Targon answers only once it is done).
        watchMs: (error) => ((error as TargonError).code === 'TIMEOUT' ? RESEND_AFTER_MS : this.options.reconcileMs / 3),
      },
      {clock: this.clock, deadline: this.deadline, sent: this.sends, unclear},
    ).catch((error: unknown) => {
      if (error instanceof TargonError) return error
      throw error
    })
    if (outcome instanceof TargonError) return this.result('failed', true, outcome.message)
    this.sends = outcome.sends
    if (outcome.kind === 'observed') {
      this.note('accepted')
      return this.result('deleted', false)
    }

    if (outcome.kind !== 'answered')
      return this.result('still-present', true, `still ${last ?? 'present'} after ${this.sends} unclear DELETE answers`)
    // The DELETE just answered was sent for the state last seen.
    const sentFor = outcome.sends > sentBefore + 1 || unclear ? (last ?? 'running') : before
    switch (outcome.value) {
      case 'accepted': {
        this.note('accepted')
        // A 204 to an `error` record that was never woken: it was a tombstone already (a probe).
        return this.confirm(sentFor === 'error' && !this.woken ? 'already-gone' : 'deleted')
      }

      case 'not-found': {
        return this.result(this.woken ? 'deleted' : 'already-gone', false)
      }

      case 'in-progress': {
        return this.confirm('deleted')
      }

      case 'refused': {
        return this.refused(sentFor)
      }
    }
  }

  private async send(): Promise<DeleteAnswer> {
    try {
      await this.client.deleteWorkload(this.org, this.target.uid)
      return 'accepted'
    } catch (error) {
      if (!(error instanceof TargonError)) throw error
      if (error.code === 'NOT_FOUND') return 'not-found'
      if (error.httpStatus === 409) return 'in-progress'
      if (error.httpStatus === 500) {
        this.refusal = error
        return 'refused'
      }

      throw error
    }
  }

  /**
   * HTTP 500 to a DELETE sent for a VM last seen `sentFor`: Targon refuses to delete what does not run. The state says
   * which case this is.
   */
  private async refused(sentFor: ObservedStatus): Promise<DeleteResult> {
    const status = await this.read()
    if (status === undefined) return this.result('failed', true, 'DELETE answered 500 and the API did not tell the state')
    if (status === 'not-found' || status === 'deleted') return this.result('deleted', false)
    // A VM that ran, refused, and now `error`: the tombstone of that very DELETE (answered 500 after the teardown), or
    // a crash. Never woken on a guess (a tombstone must not be deployed again): one more DELETE tells them apart, 204
    // to a tombstone, 500 to a crash, which is then woken.
    if (status === 'error' && RUNNING.has(sentFor) && !this.probedError) {
      this.probedError = true
      return this.deleteOnce(sentFor)
    }

    if (status === 'registered' && this.target.deployUnsettled && !this.options.wakeRegistered) {
      this.say('progress', `${this.label()}: registered, but its deploy was never answered; watching whether it lands`)
      const now = await this.watch(Math.min(this.deadline, this.clock.now() + this.options.reconcileMs / 3), new Set(['registered']))
      if (now === undefined) return this.result('failed', true, 'DELETE answered 500 and the API did not tell the state')
      if (now === 'not-found' || now === 'deleted') return this.result('deleted', false)
      if (now !== 'registered') {
        // The deploy landed: it bills from now on, and a VM on its way to running is one Targon deletes.
        this.started('deploy')
        return this.deleteOnce(now)
      }
    }

    if (status === 'registered') {
      this.note('refused')
      if (this.options.wakeRegistered) return this.wake(status)
      return this.result('left-registered', false, 'never deployed: Targon refuses to delete it (HTTP 500) until it runs; it does not run')
    }

    if (needsWake(status)) {
      this.note('refused')
      // Refused, so not a tombstone: it bills, and has since its creation (a listing that met it could not tell).
      this.started('api-created')
      return this.wake(status)
    }

    // A 500 for a running or provisioning VM says nothing certain.
    return this.deleteOnce(status, this.refusal)
  }

  /** After an accepted DELETE: watch until the record is gone (404, `deleted`, or an `error` tombstone). */
  private async confirm(action: 'already-gone' | 'deleted'): Promise<DeleteResult> {
    // Targon accepted the DELETE: whatever still looks alive is being torn down.
    const status = await this.watch(Math.min(this.deadline, this.clock.now() + CONFIRM_MS), new Set([...RUNNING, ...HALTED, 'registered']))
    if (status === 'not-found' || status === 'deleted' || status === 'error') return this.result(action, false)
    // A second DELETE during a teardown can leave the workload suspended (and billing).
    if (status === 'suspended') return this.wake(status)
    return this.result('still-present', true, `not confirmed gone within ${Math.round(CONFIRM_MS / 1000)} s`)
  }

  /**
   * Suspended or crashed (or registered, when asked): deploy it, wait until it runs, then delete it. A deploy whose
   * answer is unclear (a 5xx, a reset) is sent again while the state still shows the VM as it was, a bounded number
   * of times: waiting the whole budget for a VM whose deploy never arrived would leave it billing.
   */
  private async wake(status: ObservedStatus): Promise<DeleteResult> {
    if (this.woken) return this.result('failed', true, `still ${status} after waking it`)
    this.woken = true
    this.say('progress', `${this.label()}: ${status}, and Targon deletes only a running VM; deploying it to delete it`)
    const until = Math.min(this.deadline, this.clock.now() + WAKE_MS)
    // A registered workload starts billing once its deploy is taken (a suspended or crashed one was billing all along).
    let billed = status !== 'registered'
    const seen = (now: ObservedStatus) => {
      if (billed || now === 'registered' || now === 'not-found' || now === 'deleted') return
      this.started('wake-registered')
      billed = true
    }

    const sent = await reconcile(
      {
        classify: (error) => (!(error instanceof TargonError) ? 'fatal' : isOutcomeUnknown(error) ? 'unclear' : 'refused'),
        look: async (): Promise<Look<ObservedStatus>> => {
          const now = await this.readOnce()
          seen(now)
          return now === status ? 'watch' : {observed: now}
        },
        lookDelay: BACKOFF.wakeLook,
        lookTrouble: apiTrouble,
        onUnclear: (error) =>
          this.say('progress', `${this.label()}: the deploy to wake it got no clear answer (${error.message}); watching its state`),
        send: () => this.client.deployWorkload(this.org, this.target.uid),
        watchMs: (_error, sends) => BACKOFF.wakeLook(sends - 1),
      },
      {clock: this.clock, deadline: until},
    )
    if (sent.kind === 'refused') {
      const error = sent.error as TargonError
      if (error.code === 'NOT_FOUND') return this.result('deleted', false)
      return this.result('failed', true, `could not deploy it to delete it: ${error.message}`)
    }

    if (sent.kind === 'answered') seen('provisioning')
    const running = await pollUntil(
      async () => {
        const now = await this.readOnce()
        seen(now)
        return now === 'running' || now === 'not-found' || now === 'deleted' ? now : undefined
      },
      {clock: this.clock, deadline: until, delayMs: BACKOFF.wakeLook},
    )
    if (running === undefined)
      return this.result('failed', true, `not running within ${Math.round(WAKE_MS / 60_000)} min of deploying it to delete it`)
    if (running !== 'running') return this.result('deleted', false)
    return this.deleteOnce('running')
  }

  /** Polls the state while it is one of `pending`; the status it settled on, or the last one seen at the deadline. */
  private async watch(until: number, pending: ReadonlySet<ObservedStatus>): Promise<ObservedStatus | undefined> {
    let last: ObservedStatus | undefined
    const settled = await pollUntil(
      async () => {
        last = await this.readOnce()
        return pending.has(last) ? undefined : last
      },
      {clock: this.clock, deadline: until, delayMs: BACKOFF.deletionLook},
    )
    return settled ?? last
  }

  /** The state, waiting out transient API errors until the deadline; undefined if it never answered. */
  private read(): Promise<ObservedStatus | undefined> {
    return pollUntil(() => this.readOnce(), {clock: this.clock, deadline: this.deadline, delayMs: BACKOFF.stateRead})
  }

  private async readOnce(): Promise<ObservedStatus> {
    try {
      return workloadStatus({state: await this.client.getWorkloadState(this.org, this.target.uid)})
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') return 'not-found'
      throw error
    }
  }

  private note(outcome: 'accepted' | 'refused'): void {
    this.state.writeDeleteNote(this.org, {
      at: new Date(this.clock.now()).toISOString(),
      name: this.target.name,
      outcome,
      uid: this.target.uid,
    })
  }

  /** Tells the ledger that its billing began (with the listing's facts, or its name alone without them). */
  private started(source: 'api-created' | 'deploy' | 'wake-registered'): void {
    const none = {fleet: null, gpu_count: null, gpu_model: null, owner: null, price_per_hour: null, resource: null}
    const facts = this.target.facts ?? {...none, name: this.target.name}
    this.unrecorded(
      recordStart(this.state.dir, this.org, {createdAt: this.target.createdAt, facts, source, uid: this.target.uid}, this.clock.now()),
    )
  }

  private unrecorded(warning: string | undefined): void {
    if (warning) this.say('progress', warning)
  }

  private label(): string {
    return this.target.name ?? this.target.uid
  }

  private result(action: DeleteAction, billing: boolean, error?: string): DeleteResult {
    const done = action === 'deleted' && this.woken ? 'woken-and-deleted' : action
    return {action: done, billing, name: this.target.name, uid: this.target.uid, ...(error ? {error} : {})}
  }
}
