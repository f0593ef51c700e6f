/**
 * Waiting for capacity (up --wait). The VMs of a run that find no offer with capacity under the
 * cap, or whose deploy was refused for capacity, wait on one shared watch of the public
 * inventory: it is read without the API key, at most once per poll interval (backing off, with
 * jitter), and only while some VM waits. Nothing is created or deployed meanwhile. A unit handed
 * to a VM counts as taken until its deploy is answered (the inventory lists it as free until then),
 * so that a fleet does not rush at one free unit.
 */
import type {Clock} from '../../core/clock.js'
import type {Offer} from '../offers/schema.js'
import {normalizeOffer} from '../offers/offers.js'
import {TargonError, abortError} from '../../core/errors.js'
import {formatDuration} from '../../core/input.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {isTransient} from '../../core/wait.js'
import {poll} from '../../core/poll.js'
import {type OfferWanted, describeWanted, offersUnderCap, rentableOffers, whyNoOffer} from './candidates.js'
import {capacityPollDelay} from './poll-delay.js'

/** What waiting holds: the run's --timeout does not run while a VM waits for capacity; and the run's clock. */
export interface WaitClock {
  hold(): void
  release(): void
  readonly clock: Clock
}

export interface CapacityWatchOptions {
  wanted: OfferWanted
  /** The inventory the run read first, and when that answer came. */
  offers: Offer[]
  readAt: number
  /** No two reads closer than this (TARGON_CAPACITY_POLL_INTERVAL). */
  floorMs: number
  /** --wait, and the epoch ms at which it runs out. */
  waitMs: number
  until: number
  signal: AbortSignal
  clock: WaitClock
  /** Called when a VM that had to wait finds capacity (each time; the caller decides what is news). */
  onFound?: () => void
}

/** Whoever holds a unit of capacity: one VM of the run. */
export type Holder = object

/** One line of progress for a VM that waits. */
export type Report = (line: string) => void

export class CapacityWatch {
  private offers: Offer[]
  private readAt: number
  /** Reads in a row that found nothing to rent, for the back-off. */
  private misses = 0
  /** Every read, so that a waiter can ask for one newer than what it saw. */
  private reads = 0
  /** The unit each VM holds until its deploy is answered (or it fails): VM -> resource. */
  private readonly holders = new Map<Holder, string>()
  private nextRead: Promise<void> | undefined
  /** Aborted when the run can no longer succeed: every VM still waiting stops, with the reason. */
  private readonly stopping = new AbortController()

  constructor(
    private readonly client: TargonClient,
    private readonly options: CapacityWatchOptions,
  ) {
    this.offers = options.offers
    this.readAt = options.readAt
  }

  /**
   * The cheapest offer with capacity under the cap, one unit of it taken; waits for one until --wait runs out. When
   * nothing under the cap could ever be rented (no such offer at all), or when --wait ran out, it throws why, as
   * without --wait: NOT_FOUND, PRICE_CAP_EXCEEDED or NO_CAPACITY.
   */
  async offer(holder: Holder, report: Report): Promise<Offer> {
    const {wanted} = this.options
    if (offersUnderCap(this.offers, wanted).length === 0) throw whyNoOffer(this.offers, wanted)
    const found = await this.waitFor(
      () => this.take(holder, rentableOffers(this.offers, wanted)),
      () => this.status(),
      report,
      0,
    )
    if (found) return found
    // Capacity listed by the last read went to other VMs of this run.
    const taken = rentableOffers(this.offers, wanted).length > 0
    throw this.ranOut(
      taken
        ? new TargonError('NO_CAPACITY', `no capacity for ${describeWanted(wanted)} was left for this VM`, {hint: 'try again later'})
        : whyNoOffer(this.offers, wanted),
    )
  }

  /**
   * After a deploy of `resource` was refused for capacity: waits for a read newer than the refusal that lists
   * capacity for it, and takes a unit. False when --wait ran out first.
   */
  async resource(holder: Holder, resource: string, name: string, report: Report): Promise<boolean> {
    const offer = () => this.offers.find((candidate) => candidate.resource === resource)
    const found = await this.waitFor(
      () => {
        const current = offer()
        return current && this.take(holder, [current])
      },
      () => {
        const current = offer()
        const listed = current ? `$${current.price_per_hour.toFixed(2)}/h, ${current.available ?? '?'} available` : 'not listed'
        return `waiting for capacity to deploy ${name}: ${resource} ${listed} (${this.left()} left)`
      },
      report,
      1,
    )
    return found !== undefined
  }

  /**
   * The holder's deploy was answered (accepted or refused: from now on the inventory counts it), or the holder failed:
   * its unit, if it holds one, is no longer set aside.
   */
  release(holder: Holder): void {
    this.holders.delete(holder)
  }

  /** The run can no longer succeed (too many of its VMs failed): the VMs still waiting stop with `reason`. */
  stop(reason: TargonError): void {
    this.stopping.abort(reason)
  }

  /** A give-up of --wait: the error it would have been without waiting, saying how long the run waited. */
  ranOut(error: TargonError): TargonError {
    return error.with({
      hint: `raise --wait, or ${error.hint ?? 'try again later'}`,
      message: `${error.message}; --wait ${formatDuration(this.options.waitMs)} ran out`,
    })
  }

  /**
   * Returns what `find` finds in a read at least `newer` reads after the call; waits (holding the run's --timeout)
   * for later reads until --wait runs out (undefined).
   */
  private async waitFor<T>(find: () => T | undefined, status: () => string, report: Report, newer: number): Promise<T | undefined> {
    const wanted = this.reads + newer
    const now = this.reads >= wanted ? find() : undefined
    if (now !== undefined) return now
    this.options.clock.hold()
    try {
      const found = await poll(
        async () => {
          // No read after --wait ran out: capacity then is not for this run.
          if (this.options.clock.clock.now() >= this.options.until) return undefined
          report(status())
          await this.read()
          return this.reads >= wanted ? find() : undefined
        },
        // The shared read paces the wait (read() waits until the next read is due), so no delay of its own.
        {clock: this.options.clock.clock, deadline: this.options.until, delayMs: () => 0, signal: this.stopping.signal},
      )
      if (found !== undefined) this.options.onFound?.()
      return found
    } finally {
      this.options.clock.release()
    }
  }

  /** The next read, shared by every VM that waits. */
  private read(): Promise<void> {
    this.nextRead ??= this.readWhenDue().finally(() => (this.nextRead = undefined))
    return this.nextRead
  }

  private async readWhenDue(): Promise<void> {
    const due = this.readAt + capacityPollDelay(this.misses, this.options.floorMs)
    const {signal, until} = this.options
    const {clock} = this.options.clock
    await clock.sleep(Math.max(0, Math.min(due, until) - clock.now()), AbortSignal.any([signal, this.stopping.signal])).catch(() => {
      if (signal.aborted) throw abortError(signal)
      this.stopping.signal.throwIfAborted()
    })
    this.stopping.signal.throwIfAborted()
    // --wait runs out before the next read is due: no read closer than the floor, not even a last one.
    if (due > until) return
    try {
      const inventory = await this.client.inventory()
      this.offers = inventory.offers.map((raw) => normalizeOffer(raw, this.options.wanted.maxPrice))
      this.misses = rentableOffers(this.offers, this.options.wanted).length > 0 ? 0 : this.misses + 1
    } catch (error) {
      // A busy or unreachable API only delays the next read.
      if (signal.aborted || !isTransient(error)) throw error
      this.misses++
    } finally {
      this.readAt = this.options.clock.clock.now()
      this.reads++
    }
  }

  /** The first offer with a unit not yet set aside for another VM, taken by `holder` (which gives up any it held). */
  private take(holder: Holder, offers: Offer[]): Offer | undefined {
    this.release(holder)
    const held = (resource: string) => [...this.holders.values()].filter((each) => each === resource).length
    const offer = offers.find((candidate) => candidate.available === null || candidate.available > held(candidate.resource))
    if (offer) this.holders.set(holder, offer.resource)
    return offer
  }

  private status(): string {
    const {wanted} = this.options
    const cheapest = offersUnderCap(this.offers, wanted)[0]
    const match = cheapest
      ? `cheapest match $${cheapest.price_per_hour.toFixed(2)}/h, ${cheapest.available ?? '?'} available`
      : 'no match listed'
    return `waiting for capacity: ${describeWanted(wanted)} under $${wanted.maxPrice.toFixed(2)}/h; ${match} (${this.left()} left)`
  }

  private left(): string {
    return formatDuration(this.options.until - this.options.clock.clock.now())
  }
}
