/**
 * Every back-off of the mutations and waits, by name: the delay before the next try or look, given how many came
 * before it (0 for the first). One table, so that how hard the project presses the API can be read in one place.
 */

/** The delay before the next try or look: from how many came before (from 0), and how long the wait has lasted. */
export type Backoff = (attempt: number, elapsedMs: number) => number

/** `first` doubled per attempt, never above `most`. */
const doubling =
  (first: number, most: number) =>
  (attempt: number): number =>
    Math.min(most, first * 2 ** attempt)

/** A step between `least` and 1.5 times `least`, doubled per attempt: the jitter spreads the retries of a fleet. */
export const jittered = (least: number, attempt: number, random = Math.random()): number =>
  Math.round((least * 2 ** attempt) / 2 + random * least * 2 ** attempt)

/**
 * A VM's state while waiting for it to run: 1 s, then +0.5 s per look up to 5 s (10 s after five minutes), less up to
 * 10 % of jitter. The jitter spreads the looks of a fleet; it only ever shortens a delay, so it never delays noticing a
 * running VM.
 */
function runningLook(attempt: number, elapsedMs: number): number {
  const base = elapsedMs > 5 * 60_000 ? 10_000 : Math.min(5000, 1000 + 500 * attempt)
  return Math.round(base * (1 - Math.random() * 0.1))
}

export const BACKOFF = {
  runningLook,
  /** A create whose answer was unclear: the listing is looked at for the name every 2 s. */
  createLook: () => 2000,
  /** A deploy whose answer was unclear: the state is looked at after 1 s, 2 s, 4 s, then every 8 s. */
  deployLook: doubling(1000, 8000),
  /** The project key whose registration was unclear: the org's keys are listed after 0.5 s, 1 s, 2 s, … 8 s. */
  keyLook: doubling(500, 8000),
  /** An owner project whose create was unclear: the projects are listed every second. */
  projectLook: () => 1000,
  /** A deletion being watched (accepted, or its answer unclear): 0.25 s, doubling to 3 s. */
  deletionLook: doubling(250, 3000),
  /** A VM deployed to be deleted: 1 s, then +0.5 s per look up to 5 s. */
  wakeLook: (attempt: number) => Math.min(5000, 1000 + 500 * attempt),
  /** A read of a workload's state that met API trouble: 0.5 s, doubling to 5 s. */
  stateRead: doubling(500, 5000),
  /** The listing watched for a name (a create, a twin): every 2 s. */
  nameLook: () => 2000,
  /** A local lock held by another run: 50–150 ms, so that waiting runs do not take turns in step. */
  lockLook: () => 50 + Math.random() * 100,
  /**
   * The bootstrap's progress on the VM: every 0.25 s for the first 3 s it is followed (a bootstrap that finds every
   * step in place ends within them, and doubling from 0.2 s left its end unseen for up to a second), then once a second.
   */
  bootstrapLook: (_attempt: number, elapsedMs: number) => (elapsedMs < 3000 ? 250 : 1000),
  /** A dstack fleet whose host a deletion waits for (a job on it), or that is being processed: every 5 s. */
  dstackJobLook: () => 5000,
  /**
   * The dstack shim's health endpoint, over the session already open: 0.2 s, doubling to 1 s. A shim that has just been
   * started answers within a fraction of a second; when the look at once came too early, the next one a whole second
   * later was most of the shim phase.
   */
  shimHealthLook: doubling(200, 1000),
} satisfies Record<string, Backoff>
