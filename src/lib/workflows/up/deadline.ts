/**
 * The --timeout of a `targon up` run. Waiting for capacity (--wait) holds it: while any VM of the
 * run waits, it does not run, and once none waits any more it starts over, so that --timeout
 * bounds the rest of the run from the moment capacity was found. The run thus ends at the latest
 * --wait plus --timeout after it started.
 */
import {type Clock, MAX_TIMER_MS} from '../../core/clock.js'
import type {WaitClock} from '../../domain/capacity/watch.js'

export class RunDeadline implements WaitClock {
  private readonly controller = new AbortController()
  private timer: NodeJS.Timeout | undefined
  private endsAt = 0
  private holds = 0
  private heldSince = 0
  /** How long at least one VM waited for capacity. */
  waitedMs = 0

  constructor(
    private readonly timeoutMs: number,
    /** Epoch ms at which --wait runs out. */
    readonly waitUntil: number,
    private readonly reason: () => Error,
    /** The time the run reads; the timer that aborts it is the real one. */
    readonly clock: Clock,
  ) {
    this.start()
  }

  /** Aborts when --timeout runs out. */
  get signal(): AbortSignal {
    return this.controller.signal
  }

  /** Epoch ms by which the run must end; while a VM waits for capacity, the latest it can be. */
  get at(): number {
    return this.holds > 0 ? Math.max(this.waitUntil, this.clock.now()) + this.timeoutMs : this.endsAt
  }

  hold(): void {
    if (this.holds++ > 0) return
    clearTimeout(this.timer)
    this.heldSince = this.clock.now()
  }

  release(): void {
    if (--this.holds > 0) return
    this.waitedMs += this.clock.now() - this.heldSince
    this.start()
  }

  dispose(): void {
    clearTimeout(this.timer)
  }

  private start(): void {
    clearTimeout(this.timer)
    this.endsAt = this.clock.now() + this.timeoutMs
    // Beyond what setTimeout allows (about 24.8 days) it fires at that limit, never later than asked.
    this.timer = setTimeout(() => this.controller.abort(this.reason()), Math.min(this.timeoutMs, MAX_TIMER_MS))
    this.timer.unref()
  }
}
