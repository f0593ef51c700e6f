/**
 * The one way a mutation is driven (a create, a deploy, a DELETE, a key or project registration): send it; read the
 * answer as answered, refused (a clear no), unclear (lost, reset, a 5xx: it may or may not have been applied) or
 * fatal; after an unclear answer, look at the state (read it, list and match) before sending again, since a blind
 * second send after a commit makes a duplicate or does harm; give up after a bounded number of sends, or at the
 * deadline, saying what is known.
 */
import type {Backoff} from './backoff.js'
import {type Clock, REAL_CLOCK} from './clock.js'
import {abortError} from './errors.js'
import {poll} from './poll.js'

/** How a failed send is read. */
export type Verdict = 'fatal' | 'refused' | 'unclear'

/**
 * What one look at the state says: the mutation's effect is observed (or an end that settles it: gone, crashed); keep
 * watching until the window closes; or send again now (the state no longer moves, and the answer will tell).
 */
export type Look<S> = {observed: S} | 'send-again' | 'watch'

/** Every mutation is sent at most this many times while its answers stay unclear and the state does not show it. */
export const MAX_SENDS = 4

export interface Mutation<A, S> {
  send: () => Promise<A>
  /** A send that threw: fatal errors are thrown on; refused ones returned; unclear ones reconciled. */
  classify: (error: unknown) => Verdict
  look: () => Promise<Look<S>>
  /** How long the state is watched after the unclear answer `error` to send number `sends` before sending again. */
  watchMs: (error: Error, sends: number) => number
  /** Delays between looks while watching. */
  lookDelay: Backoff
  /** A look that threw: trouble worth waiting out gives the least delay before the next look; undefined throws it. */
  lookTrouble?: (error: unknown) => number | undefined
  /** Told of each unclear answer. */
  onUnclear?: (error: Error, sends: number) => void
  /** Told before a send that follows an unclear answer. */
  onResend?: (error: Error, sends: number) => void
}

export interface ReconcileOptions {
  /** Epoch ms (of `clock`) after which nothing more is sent. */
  deadline?: number
  clock?: Clock
  signal?: AbortSignal
  /** One look before the first send: the mutation may have been made already (by an earlier or concurrent run). */
  lookFirst?: boolean
  /** Sends already made of this mutation, the last of which was answered `unclear` when given: watching starts. */
  sent?: number
  unclear?: Error
}

export type Reconciled<A, S> =
  | {kind: 'answered'; value: A; sends: number}
  | {kind: 'observed'; state: S; sends: number}
  | {kind: 'refused'; error: unknown; sends: number}
  /** Out of sends or time with nothing seen; `error` is the last unclear answer, when there was one. */
  | {kind: 'unsettled'; error?: Error; sends: number; why: 'deadline' | 'sends'}

export async function reconcile<A, S>(mutation: Mutation<A, S>, options: ReconcileOptions = {}): Promise<Reconciled<A, S>> {
  const clock = options.clock ?? REAL_CLOCK
  const deadline = options.deadline ?? Number.POSITIVE_INFINITY
  let sends = options.sent ?? 0
  let unclear = options.unclear
  if (options.lookFirst) {
    const look = await mutation.look()
    if (typeof look === 'object') return {kind: 'observed', sends, state: look.observed}
  }

  for (;;) {
    if (unclear) {
      const look = await poll(
        async () => {
          const answer = await mutation.look()
          return answer === 'watch' ? undefined : answer
        },
        {
          clock,
          deadline: Math.min(deadline, clock.now() + mutation.watchMs(unclear, sends)),
          delayMs: mutation.lookDelay,
          onTrouble: mutation.lookTrouble,
          signal: options.signal,
        },
      )
      if (typeof look === 'object') return {kind: 'observed', sends, state: look.observed}
      if (sends >= MAX_SENDS) return {error: unclear, kind: 'unsettled', sends, why: 'sends'}
      if (clock.now() >= deadline) return {error: unclear, kind: 'unsettled', sends, why: 'deadline'}
      mutation.onResend?.(unclear, sends)
    }

    if (options.signal?.aborted) throw abortError(options.signal)
    sends++
    try {
      return {kind: 'answered', sends, value: await mutation.send()}
    } catch (error) {
      const verdict = mutation.classify(error)
      if (verdict === 'fatal') throw error
      if (verdict === 'refused') return {error, kind: 'refused', sends}
      unclear = error instanceof Error ? error : new Error(String(error))
      mutation.onUnclear?.(unclear, sends)
    }
  }
}
