/** A real local HTTP receiver for notifications (and heartbeat pings, which carry no body), shared by the tests of one file. */
import {type Server, createServer} from 'node:http'
import {afterAll, beforeAll} from 'vitest'

/** The webhook's path carries a token, as Slack's do. */
export const HOOK_PATH = '/services/T000/B000/secret-hook-token'

export interface Webhook {
  /** Set once the receiver listens. */
  url: string
  /** What arrived, in order; a test may empty it. */
  received: {method: string; path: string; body: any}[]
  /** The status the receiver answers with. */
  answerStatus: number
}

export function useWebhook(): Webhook {
  const hook: Webhook = {answerStatus: 200, received: [], url: ''}
  let receiver: Server
  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        hook.received.push({body: body === '' ? null : JSON.parse(body), method: request.method ?? '', path: request.url ?? ''})
        response.writeHead(hook.answerStatus).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    hook.url = `http://127.0.0.1:${(receiver.address() as {port: number}).port}${HOOK_PATH}`
  })
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())))
  return hook
}
