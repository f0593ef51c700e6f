/**
 * The wait-running phase and the state watch behind it: the VM's state is polled, fast at first and then backing
 * off, until it says running. With bootstrap, the bootstrap does not wait for that: it starts as soon as the state
 * carries an address (a VM often answers SSH while Targon still says provisioning), and the watch goes on alongside
 * at a low rate (TARGON_STATE_WATCH_INTERVAL) until the bootstrap is done and the state says running, so that a VM
 * that turns to error still fails the run. Only a terminal state, the wait-running bound or the end of the run stops
 * it: rate limits and other transient API errors just delay the next poll.
 */
import {HALTED} from '../../domain/deletion/lifecycle.js'

import {withConsoleTail} from '../logs/logs.js'
import {TargonError, abortError} from '../../core/errors.js'
import {workloadStatus} from '../../adapters/targon/schemas.js'
import {apiTrouble} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import {Deferred} from '../../core/deferred.js'
import {poll} from '../../core/poll.js'
import type {Provisioning} from './provisioning.js'
import type {Claim, Deployed, Endpoint, Running, StateWatch} from './stages.js'

/** How long a VM may take to run (within the run's --timeout): GPU VMs can take many minutes to boot. */
export const WAIT_RUNNING_MS = 20 * 60_000

/** --no-bootstrap: wait until the VM runs with an address. */
export async function waitRunning(ctx: Provisioning, deployed: Deployed): Promise<Running> {
  const watch = new PolledStateWatch(ctx, deployed.claim, {bootstrapping: false})
  return {...deployed, endpoint: await watch.running, kind: 'running'}
}

/** Watches one deployed VM's state from deploy until it runs and, with bootstrap, until the bootstrap is done. */
export class PolledStateWatch implements StateWatch {
  /** Aborted as soon as the VM fails (error, suspended, deleted, not running in time): stops its bootstrap. */
  private readonly failure = new AbortController()
  /** The failure as reported, once its console's last lines are read. */
  private reported: Promise<unknown> | undefined
  /** Ends the polling (after a failure, or once nothing needs the state any more). */
  private readonly halt = new AbortController()
  private readonly addressed = new Deferred<Endpoint>()
  private readonly ran = new Deferred<Endpoint>()
  private readonly started: number
  private bootstrapping: boolean
  private hasAddress = false
  private isRunning = false
  /** The address the state gave once it said running. */
  private runningAddress: Endpoint | undefined
  private last: string

  constructor(
    private readonly ctx: Provisioning,
    private readonly claim: Claim,
    options: {bootstrapping: boolean},
  ) {
    this.started = ctx.clock.now()
    this.bootstrapping = options.bootstrapping
    this.last = claim.status
    void this.watchState()
  }

  /** The first address the state carries, even while it still says provisioning. */
  get address(): Promise<Endpoint> {
    return this.addressed.promise
  }

  /** The address once the state says running. */
  get running(): Promise<Endpoint> {
    return this.ran.promise
  }

  /** The address once the state said running; undefined before. */
  get runningEndpoint(): Endpoint | undefined {
    return this.runningAddress
  }

  /** Aborts as soon as the VM fails. */
  get signal(): AbortSignal {
    return this.failure.signal
  }

  /** The bootstrap is done: poll at the normal rate again until the state says running, then stop. */
  bootstrapDone(): void {
    this.bootstrapping = false
    if (this.isRunning) this.halt.abort()
  }

  /** The bootstrap failed for a reason of its own: stop watching, and let wait-running report the same error. */
  abandon(error: unknown): void {
    this.ran.reject(error)
    this.addressed.reject(error)
    this.halt.abort()
  }

  /**
   * The VM's failure, if it failed, as reported. A bootstrap that lost its VM (SSH dropped, a command failed) asks
   * with `fresh` to read the state once more first, so that it reports the VM's error rather than its own.
   */
  async failed(fresh = false): Promise<unknown> {
    if (fresh && !this.halt.signal.aborted) {
      try {
        await this.observe()
      } catch {
        // The API could not say: the bootstrap's own error stands.
      }
    }

    return this.reported
  }

  private async watchState(): Promise<void> {
    const bound = () => Math.min(this.ctx.deadline.at, this.started + WAIT_RUNNING_MS)
    const running = () => this.isRunning
    let ended: 'halted' | undefined
    try {
      ended = await poll(
        async () => {
          await this.observe()
          return this.halt.signal.aborted ? 'halted' : undefined
        },
        {
          // Not running yet: the last read comes at the bound, however long the interval; once running, until halted.
          get deadline() {
            return running() ? Number.POSITIVE_INFINITY : bound()
          },
          // While the bootstrap runs on a VM with an address, the state only has to say that it did not fail.
          delayMs: (attempt, elapsed) =>
            this.bootstrapping && this.hasAddress ? this.ctx.request.stateWatchIntervalMs : BACKOFF.runningLook(attempt, elapsed),
          clock: this.ctx.clock,
          onTrouble: apiTrouble,
          signal: AbortSignal.any([this.ctx.signal, this.halt.signal]),
        },
      )
    } catch (error) {
      if (this.halt.signal.aborted) return
      if (this.ctx.signal.aborted) return this.abandon(abortError(this.ctx.signal))
      return this.fail(error)
    }

    if (ended) return
    const waited = Math.round((this.ctx.clock.now() - this.started) / 1000)
    this.fail(
      new TargonError('TIMEOUT', `${this.claim.name} was not running after ${waited} s in wait-running (last status: ${this.last})`, {
        hint: 'raise --timeout, or try another offer',
        resource: {name: this.claim.name, uid: this.claim.uid},
      }),
    )
  }

  /** One read of the state: settles the address and running, or fails on a terminal state. */
  private async observe(): Promise<void> {
    const {claim} = this
    let state
    try {
      state = await this.ctx.client.getWorkloadState(this.ctx.request.org, claim.uid)
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') return this.fail(goneError(claim))
      throw error
    }

    if (this.halt.signal.aborted) return
    this.last = workloadStatus({state})
    claim.status = this.last
    if (this.last === 'deleted') return this.fail(goneError(claim))
    if (this.last === 'error' || this.last === 'suspended' || HALTED.has(this.last)) {
      return this.fail(
        new TargonError('API_ERROR', `${claim.name} went to state ${this.last}${state.message ? `: ${state.message}` : ''}`, {
          hint: 'try another offer or run again later',
          resource: {name: claim.name, uid: claim.uid},
        }),
      )
    }

    if (!state.public_ip || !state.ssh_port) return
    const endpoint = {host: state.public_ip, port: state.ssh_port}
    this.hasAddress = true
    this.addressed.resolve(endpoint)
    if (this.last !== 'running') return
    this.isRunning = true
    this.runningAddress = endpoint
    this.ran.resolve(endpoint)
    if (!this.bootstrapping) this.halt.abort()
  }

  /** The VM failed: stop its bootstrap at once, and report the error with its console's last lines. */
  private fail(error: unknown): void {
    if (this.halt.signal.aborted) return
    this.halt.abort()
    this.failure.abort(error)
    // Read without the run's signal, which may have expired.
    this.reported = withConsoleTail(this.ctx.cleanupClient, this.ctx.request.org, this.claim, error)
      .catch(() => error)
      .then((full) => {
        this.abandon(full)
        return full
      })
  }
}

function goneError(claim: Claim): TargonError {
  return new TargonError('API_ERROR', `${claim.name} was deleted while waiting for it to run`, {
    hint: 'someone or something deleted it; run targon up again',
    resource: {name: claim.name, uid: claim.uid},
  })
}
