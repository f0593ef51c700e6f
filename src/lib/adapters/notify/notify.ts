/**
 * Notifications: one Slack-compatible JSON POST per run to the notify URL, for what a person should hear about
 * without watching a terminal (a fleet ready, a failed up and what it rolled back, capacity found, VMs deleted on a
 * schedule, and above all what still bills). The URL is a secret (a Slack webhook URL carries its token): it is
 * never printed, and a failed delivery says why without it. Delivery takes at most DELIVERY_BUDGET_MS in all,
 * retries included, and never changes a run's outcome.
 */

import {usd} from '../../core/output.js'
import {poll} from '../../core/poll.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {Agent, request} from '../targon/undici-subset.js'

export type NotifyEvent =
  | 'capacity-found'
  | 'down-deleted'
  | 'down-still-billing'
  | 'dstack-out-of-sync'
  | 'fetch-failing'
  | 'interrupted-billing'
  | 'runway-short'
  | 'sweep-deleted'
  | 'sweep-warning'
  | 'up-failed'
  | 'up-ready'

export interface Notification {
  /** The line a person reads in the channel. */
  text: string
  /** What a script reads: the event and its facts; never a secret. */
  targon: {
    event: NotifyEvent
    command: string
    org: string | null
    /** The owner the run acted for (config owner, TARGON_OWNER), or, in a sweep's warning of one VM, that VM's; null: none. */
    owner: string | null
    profile: string | null
    exit_code: number
    /** The VMs it is about. */
    vms: {name: string | null; uid: string}[]
    /** uids that still bill (or may) after the run. */
    still_billing: string[]
  }
}

const DELIVERY_BUDGET_MS = 5000
/** What is read of the receiver's reply (Slack answers `ok`); the rest is not read. */
const MAX_REPLY_BYTES = 4096

/**
 * The text as Slack-compatible receivers render it: `&`, `<` and `>` escaped (their documented escaping), so that
 * `<!channel>` or `<https://…|a link>` from an API value arrives as plain text.
 */
export function slackText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
}

/** Reads at most MAX_REPLY_BYTES of a reply, then drops the rest: a receiver that answers without end costs nothing. */
async function drainReply(body: AsyncIterable<Buffer> & {destroy: () => void}): Promise<void> {
  let read = 0
  for await (const chunk of body) {
    read += chunk.length
    if (read > MAX_REPLY_BYTES) break
  }

  body.destroy()
}

/** Posts the notification; undefined when delivered, else a warning that does not name the URL. */
export async function deliver(url: string, notification: Notification, clock: Clock = REAL_CLOCK): Promise<string | undefined> {
  const deadline = clock.now() + DELIVERY_BUDGET_MS
  const agent = new Agent({connect: {timeout: DELIVERY_BUDGET_MS}})
  let problem = `no answer within ${DELIVERY_BUDGET_MS / 1000} s`
  try {
    const delivered = await poll(
      async () => {
        const left = deadline - clock.now()
        if (left <= 0) return false
        try {
          const answer = await request(url, {
            body: JSON.stringify({...notification, text: slackText(notification.text)}),
            bodyTimeout: left,
            dispatcher: agent,
            headers: {'content-type': 'application/json'},
            headersTimeout: left,
            method: 'POST',
            signal: AbortSignal.timeout(left),
          })
          await drainReply(answer.body).catch(() => undefined)
          if (answer.statusCode < 300) return true
          problem = `HTTP ${answer.statusCode}`
          // A refusal that a repeat will not change.
          if (answer.statusCode < 500 && answer.statusCode !== 429) return false
        } catch (error) {
          problem = inWords(error as NodeJS.ErrnoException)
        }

        return undefined
      },
      {clock, deadline, delayMs: (attempt) => 250 * 2 ** attempt},
    )
    if (delivered) return undefined
  } finally {
    await agent.close().catch(() => undefined)
  }

  return `the notification was not delivered (${problem}); the outcome of the run is as reported here`
}

/**
 * What failed, in words a person reads in a cron log; built from the error's code only, as its message may carry the
 * address (and the address the token).
 */
function inWords(error: NodeJS.ErrnoException): string {
  const budget = `${DELIVERY_BUDGET_MS / 1000} s`
  // A time-out is a DOMException, whose numeric code (23) says nothing: its name does.
  const code = typeof error.code === 'string' ? error.code : error.name
  const words: Record<string, string> = {
    AbortError: `no answer within ${budget}`,
    EAI_AGAIN: 'the host name could not be looked up',
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    ENOTFOUND: 'host name not found',
    ETIMEDOUT: `connection timed out after ${budget}`,
    TimeoutError: `no answer within ${budget}`,
    UND_ERR_BODY_TIMEOUT: `no answer within ${budget}`,
    UND_ERR_CONNECT_TIMEOUT: `connection timed out after ${budget}`,
    UND_ERR_HEADERS_TIMEOUT: `no answer within ${budget}`,
    UND_ERR_SOCKET: 'connection closed by the other side',
  }
  if (words[code]) return words[code]
  if (/CERT|TLS|SSL/.test(code)) return `its TLS certificate was not accepted (${code})`
  return `delivery failed (${code})`
}

/**
 * The hourly price and the owners of the VMs a message is about, for its text: "3.38 USD/h; owner alice". Prices
 * the listing did not give are said to be unknown rather than counted as 0.
 */
export function priceAndOwners(vms: readonly {price_per_hour: number | null; owner: string | null}[]): string {
  const priced = vms.filter((vm) => vm.price_per_hour !== null)
  const total = priced.reduce((sum, vm) => sum + (vm.price_per_hour as number), 0)
  const price = priced.length === vms.length ? `${usd(total)} USD/h` : `${usd(total)} USD/h and ${vms.length - priced.length} unpriced`
  const owners = [...new Set(vms.map((vm) => vm.owner))]
  const named = owners.filter((owner): owner is string => owner !== null)
  const owner =
    owners.length === 0 || (named.length === 0 && owners.length === 1)
      ? 'no owner'
      : `${named.length === 1 ? 'owner' : 'owners'} ${named.join(', ')}${named.length < owners.length ? ' and none' : ''}`
  return `${price}; ${owner}`
}

/** How a notify URL is shown (config list): its origin only, as the rest may be a token. */
export function maskedNotifyUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`
  } catch {
    return '…'
  }
}
