/** The one bounded-concurrency primitive: a counting semaphore, and a map over items built on it. */

/** At most `size` holders at once, served in arrival order. */
export class Slots {
  private free: number
  private readonly waiting: (() => void)[] = []

  constructor(size: number) {
    this.free = Math.max(1, size)
  }

  /** Waits for a slot; the function it returns gives the slot back. */
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--
    else await new Promise<void>((resolve) => this.waiting.push(resolve))
    return () => {
      const next = this.waiting.shift()
      if (next) next()
      else this.free++
    }
  }
}

/**
 * `work` on every item, at most `limit` at once, started in order; the results in the items' order. After a failure
 * no further item starts, and the first failure is thrown once those under way have settled or failed.
 */
export async function mapBounded<T, R>(items: T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const slots = new Slots(limit)
  let failed = false
  return Promise.all(
    items.map(async (item, index) => {
      const release = await slots.take()
      try {
        if (failed) throw new Error('not started: an earlier item failed')
        return await work(item, index)
      } catch (error) {
        failed = true
        throw error
      } finally {
        release()
      }
    }),
  )
}
