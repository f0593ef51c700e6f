/**
 * The heartbeat of a scheduled sweep: one request to a dead-man switch (healthchecks-style ping URL) per sweep, to the
 * URL on success and to URL + `/fail` otherwise, so that a monitor pages someone when the guard fails or stops
 * running. The URL is a secret (it marks the check alive): never printed, logged or put in an event. A ping takes at
 * most PING_BUDGET_MS, its reply is read to at most MAX_REPLY_BYTES, and a failed ping is a warning, never a failure.
 */
import {Agent, request} from '../targon/undici-subset.js'
import {EXIT_CODES} from '../../core/errors.js'

export const PING_BUDGET_MS = 5000
export const MAX_REPLY_BYTES = 4096

/** The exits of a sweep that count as success for its monitor: done (0), and done with a short runway (14). */
export function pingSucceeds(exitCode: number): boolean {
  return exitCode === 0 || exitCode === EXIT_CODES.RUNWAY_SHORT
}

/** URL + `/fail` in the path (a query string stays after it), as healthchecks-style monitors expect. */
export function failUrl(url: string): string {
  const parsed = new URL(url)
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/fail`
  return parsed.href
}

/** Pings the URL for a sweep that ended with `exitCode`; undefined when the monitor took it, else a warning without the URL. */
export async function ping(url: string, exitCode: number, budgetMs = PING_BUDGET_MS): Promise<string | undefined> {
  const target = pingSucceeds(exitCode) ? url : failUrl(url)
  const agent = new Agent({connect: {timeout: budgetMs}})
  const signal = AbortSignal.timeout(budgetMs)
  try {
    const answer = await request(target, {
      bodyTimeout: budgetMs,
      dispatcher: agent,
      headersTimeout: budgetMs,
      method: 'GET',
      signal,
    })
    await readBounded(answer.body)
    return answer.statusCode < 300
      ? undefined
      : `the heartbeat was not taken (HTTP ${answer.statusCode}); the sweep's outcome is as reported`
  } catch (error) {
    // The code only: an error's message may carry the address.
    const why = signal.aborted ? `no answer within ${budgetMs / 1000} s` : ((error as NodeJS.ErrnoException).code ?? (error as Error).name)
    return `the heartbeat was not sent (${why}); the sweep's outcome is as reported`
  } finally {
    await agent.destroy().catch(() => undefined)
  }
}

/** Reads a reply to at most MAX_REPLY_BYTES, then drops the rest: a monitor's reply is a word, not a stream. */
async function readBounded(body: AsyncIterable<Buffer> & {destroy: () => unknown}): Promise<void> {
  let read = 0
  for await (const chunk of body) {
    read += chunk.length
    if (read >= MAX_REPLY_BYTES) {
      body.destroy()
      return
    }
  }
}
