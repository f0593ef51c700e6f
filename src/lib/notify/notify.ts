/**
 * Notifications: one Slack-compatible JSON POST per run to the notify URL, for what a person should hear about
 * without watching a terminal (a fleet ready, a failed up and what it rolled back, capacity found, VMs deleted on a
 * schedule, and above all what still bills). The URL is a secret (a Slack webhook URL carries its token): it is
 * never printed, and a failed delivery says why without it. Delivery takes at most DELIVERY_BUDGET_MS in all,
 * retries included, and never changes a run's outcome.
 */

import {poll} from '../core/poll.js'
import {Agent, request} from '../targon/undici-subset.js'

export type NotifyEvent =
  | 'capacity-found'
  | 'down-deleted'
  | 'down-still-billing'
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
    profile: string | null
    exit_code: number
    /** The VMs it is about. */
    vms: {name: string | null; uid: string}[]
    /** uids that still bill (or may) after the run. */
    still_billing: string[]
  }
}

const DELIVERY_BUDGET_MS = 5000

/** Posts the notification; undefined when delivered, else a warning that does not name the URL. */
export async function deliver(url: string, notification: Notification): Promise<string | undefined> {
  const deadline = Date.now() + DELIVERY_BUDGET_MS
  const agent = new Agent({connect: {timeout: DELIVERY_BUDGET_MS}})
  let problem = 'no answer in time'
  try {
    const delivered = await poll(
      async () => {
        const left = deadline - Date.now()
        if (left <= 0) return false
        try {
          const answer = await request(url, {
            body: JSON.stringify(notification),
            bodyTimeout: left,
            dispatcher: agent,
            headers: {'content-type': 'application/json'},
            headersTimeout: left,
            method: 'POST',
            signal: AbortSignal.timeout(left),
          })
          await answer.body.text().catch(() => '')
          if (answer.statusCode < 300) return true
          problem = `HTTP ${answer.statusCode}`
          // A refusal that a repeat will not change.
          if (answer.statusCode < 500 && answer.statusCode !== 429) return false
        } catch (error) {
          // The code only: an error's message may carry the address.
          problem = (error as NodeJS.ErrnoException).code ?? (error as Error).name
        }

        return undefined
      },
      {deadline, delayMs: (attempt) => 250 * 2 ** attempt},
    )
    if (delivered) return undefined
  } finally {
    await agent.close().catch(() => undefined)
  }

  return `the notification was not delivered (${problem}); the outcome of the run is as reported here`
}

/** How a notify URL is shown (config list): its origin only, as the rest may be a token. */
export function maskedNotifyUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`
  } catch {
    return '…'
  }
}
