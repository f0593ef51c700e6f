/**
 * One HTTP exchange with the Targon API: deadlines, retries, error mapping and response
 * validation. Knows nothing about endpoints; client.ts does.
 */
import {Slots} from '../../core/concurrency.js'
import {jittered} from '../../core/backoff.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {retry} from '../../core/retry.js'
import {Agent, errors as undiciErrors, request} from './undici-subset.js'
import type * as z from 'zod'

import {refusalCode, refusalKind} from './refusals.js'
import {TargonError, abortError, isAbortError} from '../../core/errors.js'
import {VERSION} from '../../core/version.js'

/**
 * Which failures may be retried automatically. A 429 means "not processed", so every call retries it (after
 * Retry-After, or a jittered back-off, within the caller's signal); mutations retry nothing else blindly.
 */
export type RetryPolicy = 'rate-limit' | 'safe'

export interface HttpOptions {
  baseUrl: string
  token?: string
  /** Where the token came from, for the hint of a 401 or 403 (e.g. TARGON_API_KEY, or the config file). */
  tokenSource?: string
  signal?: AbortSignal
  /** Whole-request deadline per attempt, in ms. */
  requestTimeoutMs?: number
  connectTimeoutMs?: number
  maxAttempts?: number
  /** First back-off step in ms; doubles each attempt, with jitter. */
  retryBaseMs?: number
  /** Receives one redacted line per request (for --verbose). */
  trace?: (line: string) => void
  /** The time retries sleep on and exchanges are timed with. */
  clock?: Clock
}

export interface CallOptions<T extends z.ZodType> {
  method: 'DELETE' | 'GET' | 'POST'
  path: string
  query?: Record<string, number | string | undefined>
  body?: unknown
  schema: T
  retry: RetryPolicy
  auth?: boolean
  /** This call's own answer deadline, in ms, instead of the transport's requestTimeoutMs. */
  timeoutMs?: number
  /** This call's own most attempts, instead of the transport's maxAttempts. */
  maxAttempts?: number
  /** This call's own bound on the body read, in bytes, below MAX_BODY_BYTES. */
  maxBytes?: number
  /** The body as text, not parsed as JSON: `schema` gets the string (for endpoints that may answer text/plain). */
  raw?: boolean
  /**
   * A body over MAX_BODY_BYTES keeps its last MAX_BODY_BYTES (for a console log) instead of failing as BAD_RESPONSE;
   * called when that happened.
   */
  onTruncated?: () => void
}

/** The most of a response body that is read (a larger one is BAD_RESPONSE, or its tail; see onTruncated): 16 MiB. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024

/** Targon asks clients to keep mutations few: at most this many POSTs and DELETEs are in flight per run. */
export const MAX_MUTATIONS_IN_FLIGHT = 8

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504])
const MAX_RETRY_AFTER_MS = 60_000

export class HttpTransport {
  readonly options: Required<Omit<HttpOptions, 'signal' | 'token' | 'tokenSource' | 'trace'>> &
    Pick<HttpOptions, 'signal' | 'token' | 'tokenSource' | 'trace'>
  private readonly agent: Agent
  private readonly mutations: Slots

  constructor(options: HttpOptions, shared?: {agent: Agent; mutations: Slots}) {
    this.options = {
      clock: REAL_CLOCK,
      connectTimeoutMs: 10_000,
      maxAttempts: 4,
      requestTimeoutMs: 60_000,
      retryBaseMs: 500,
      ...options,
    }
    this.mutations = shared?.mutations ?? new Slots(MAX_MUTATIONS_IN_FLIGHT)
    this.agent =
      shared?.agent ??
      new Agent({
        bodyTimeout: this.options.requestTimeoutMs,
        connect: {timeout: this.options.connectTimeoutMs},
        headersTimeout: this.options.requestTimeoutMs,
        keepAliveTimeout: 4000,
      })
  }

  /** The same connection pool and mutation limit, governed by another abort signal (e.g. clean-up that must outlive Ctrl-C). */
  withSignal(signal: AbortSignal | undefined): HttpTransport {
    return new HttpTransport({...this.options, signal}, {agent: this.agent, mutations: this.mutations})
  }

  async close(): Promise<void> {
    if (!this.agent.closed && !this.agent.destroyed) await this.agent.close()
  }

  async call<T extends z.ZodType>(call: CallOptions<T>): Promise<z.output<T>> {
    const endpoint = `${call.method} ${call.path}`
    return retry(() => this.attempt(call, endpoint), {
      clock: this.options.clock,
      delayAfter: (error, attempt) => {
        const delay = this.retryDelay(call, error, attempt)
        if (delay !== undefined) this.options.trace?.(`${endpoint}: retrying in ${delay} ms (${(error as Error).message})`)
        return delay
      },
      signal: this.options.signal,
    })
  }

  /** One exchange; a mutation first waits for a free slot (the retry back-off holds none). */
  private async attempt<T extends z.ZodType>(call: CallOptions<T>, endpoint: string): Promise<z.output<T>> {
    const release = call.method === 'GET' ? undefined : await this.mutations.take()
    try {
      return await this.once(call, endpoint)
    } finally {
      release?.()
    }
  }

  private throwIfAborted(): void {
    const signal = this.options.signal
    if (signal?.aborted) throw abortError(signal)
  }

  private async once<T extends z.ZodType>(call: CallOptions<T>, endpoint: string): Promise<z.output<T>> {
    const url = new URL(this.options.baseUrl + call.path)
    for (const [key, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value))
    }

    const headers: Record<string, string> = {
      accept: call.raw ? 'text/plain, application/json;q=0.9' : 'application/json',
      'user-agent': `targon-fleet/${VERSION} node/${process.versions.node}`,
    }
    if (call.auth !== false && this.options.token) headers.authorization = `Bearer ${this.options.token}`
    if (call.body !== undefined) headers['content-type'] = 'application/json'

    const timeoutMs = call.timeoutMs ?? this.options.requestTimeoutMs
    const deadline = AbortSignal.timeout(timeoutMs)
    const signal = this.options.signal ? AbortSignal.any([this.options.signal, deadline]) : deadline
    const started = this.options.clock.now()
    let response
    try {
      response = await request(url, {
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        bodyTimeout: timeoutMs,
        dispatcher: this.agent,
        headers,
        headersTimeout: timeoutMs,
        method: call.method,
        signal,
      })
    } catch (error) {
      this.throwIfAborted()
      throw this.transportError(error, endpoint, timeoutMs)
    }

    const requestId = headerValue(response.headers['x-request-id'])
    let text: string
    try {
      const maxBytes = call.maxBytes ?? MAX_BODY_BYTES
      const tooLarge = () =>
        new TargonError('BAD_RESPONSE', `Targon API answered ${endpoint} with more than ${sizeText(maxBytes)}`, {
          hint: 'retry later; if it persists, report it to Targon support',
        })
      text = await readCapped(response.body, maxBytes, tooLarge, call.onTruncated)
    } catch (error) {
      this.throwIfAborted()
      if (error instanceof TargonError) throw error
      throw this.transportError(error, endpoint, timeoutMs)
    }

    this.options.trace?.(
      `${endpoint} -> ${response.statusCode} (${this.options.clock.now() - started} ms)${requestId ? ` request-id ${requestId}` : ''}`,
    )
    if (response.statusCode >= 300) {
      throw httpError(
        response.statusCode,
        text,
        endpoint,
        requestId,
        headerValue(response.headers['retry-after']),
        this.options.tokenSource,
        this.options.clock.now(),
      )
    }

    if (call.raw) return call.schema.parse(text)
    return parseBody(call.schema, text, endpoint, requestId)
  }

  private transportError(error: unknown, endpoint: string, timeoutMs: number): TargonError {
    const code = (error as {code?: string}).code
    if (isAbortError(error) || error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
      return new TargonError('TIMEOUT', `Targon API did not answer ${endpoint} within ${Math.round(timeoutMs / 1000)} s`, {
        cause: error,
        hint: 'check the network, or raise TARGON_HTTP_TIMEOUT',
      })
    }

    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new TargonError(
        'TIMEOUT',
        `could not connect to ${this.options.baseUrl} within ${Math.round(this.options.connectTimeoutMs / 1000)} s (${endpoint})`,
        {
          cause: error,
          hint: 'check the network and the API URL (TARGON_API_URL, or targon config get api-url)',
        },
      )
    }

    return new TargonError('NETWORK_ERROR', `cannot reach ${this.options.baseUrl} (${endpoint}): ${code ?? (error as Error).message}`, {
      cause: error,
      details: {transport_code: code},
      hint: 'check the network and the API URL (TARGON_API_URL, or targon config get api-url)',
    })
  }

  /** Milliseconds to wait before the next attempt, or undefined to give up. */
  private retryDelay(call: Pick<CallOptions<z.ZodType>, 'maxAttempts' | 'retry'>, error: unknown, attempt: number): number | undefined {
    const policy = call.retry
    if (attempt >= (call.maxAttempts ?? this.options.maxAttempts) || !(error instanceof TargonError)) return undefined
    const status = error.httpStatus
    // A classified refusal (capacity, credits, quota) is an answer, not trouble: it is never repeated here.
    const unclassified = error.code === 'API_ERROR' || error.code === 'NETWORK_ERROR'
    const retryable =
      unclassified &&
      (policy === 'safe' ? (status !== undefined && RETRYABLE_STATUS.has(status)) || error.code === 'NETWORK_ERROR' : status === 429)
    if (!retryable) return undefined
    const retryAfter = error.details?.retry_after_ms
    if (typeof retryAfter === 'number') return Math.min(retryAfter, MAX_RETRY_AFTER_MS)
    return jittered(this.options.retryBaseMs, attempt - 1)
  }
}

/**
 * A body as text, reading at most `maxBytes`: over it, the rest is not read and the answer is BAD_RESPONSE, or, with
 * onTruncated, only its last `maxBytes` are kept. Memory stays bounded whatever the server sends.
 */
/**
 * An HTTP body as text, at most `maxBytes`: past that the read stops with `tooLarge()`, or, with `onTruncated`, goes on
 * keeping only the last `maxBytes` (a console log's end).
 */
export async function readCapped(
  body: AsyncIterable<Buffer> & {destroy: () => void},
  maxBytes: number,
  tooLarge: () => Error,
  onTruncated?: () => void,
): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  let truncated = false
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    if (size <= maxBytes) continue
    if (!onTruncated) {
      body.destroy()
      throw tooLarge()
    }

    truncated = true
    while (size - (chunks[0]?.length ?? 0) >= maxBytes) size -= (chunks.shift() as Buffer).length
  }

  if (truncated) onTruncated?.()
  const text = Buffer.concat(chunks)
  return (truncated ? text.subarray(text.length - Math.min(text.length, maxBytes)) : text).toString('utf8')
}

function sizeText(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** Retry-After as seconds or an HTTP date, in ms. */
export function parseRetryAfter(value: string | undefined, now = REAL_CLOCK.now()): number | undefined {
  if (!value) return undefined
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.round(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Turns an error answer into a TargonError carrying status, the API's error and reason, and the request id. */
export function httpError(
  status: number,
  text: string,
  endpoint: string,
  requestId?: string,
  retryAfter?: string,
  tokenSource = 'the API key',
  now = REAL_CLOCK.now(),
): TargonError {
  let apiMessage: string | undefined
  let reason: string | undefined
  try {
    const body = JSON.parse(text) as unknown
    if (body && typeof body === 'object') {
      const {error, message, reason: bodyReason} = body as Record<string, unknown>
      if (typeof error === 'string') apiMessage = error
      else if (typeof message === 'string') apiMessage = message
      if (typeof bodyReason === 'string') reason = bodyReason
    }
  } catch {
    apiMessage = excerpt(text)
  }

  const refusal = refusalCode(refusalKind(status, reason, apiMessage))
  const code = refusal ?? (status === 401 || status === 403 ? 'AUTH' : status === 404 ? 'NOT_FOUND' : 'API_ERROR')
  const what = apiMessage ? `: ${apiMessage}` : ''
  const hints: Record<string, string> = {
    INSUFFICIENT_CREDITS: 'add credits to the org, or pick a cheaper offer',
    NO_CAPACITY: 'try again later or with --wait 1h, or widen --gpu / raise --max-price',
    QUOTA_EXCEEDED: 'a limit of the org was reached: delete VMs you no longer need (targon status), or ask Targon to raise it',
    API_ERROR:
      status === 410
        ? 'the API retired this endpoint or workload type; update targon-fleet'
        : 'retry later; if it persists, quote the request id to Targon support',
    AUTH: `check ${tokenSource} and that the key belongs to this org`,
    // A 404 on a path that names no workload or key means the route itself is missing: a wrong base URL.
    NOT_FOUND: namesResource(endpoint)
      ? 'check the name, uid or org'
      : 'the API has no such endpoint: check that the API URL (TARGON_API_URL, or targon config get api-url) is the API origin, e.g. https://api.targon.com',
  }
  return new TargonError(code, `Targon API answered ${status} to ${endpoint}${what}`, {
    details: {retry_after_ms: parseRetryAfter(retryAfter, now)},
    hint: hints[code],
    httpStatus: status,
    reason,
    requestId,
  })
}

/** Whether an endpoint addresses one workload or SSH key (vm-images is a collection). */
function namesResource(endpoint: string): boolean {
  return /\/(workloads|ssh-keys)\/(?!vm-images$)[^/]+/.test(endpoint)
}

/** At most 200 characters of a non-JSON body, on one line and without markup. */
function excerpt(text: string): string | undefined {
  const flat = text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  if (!flat) return undefined
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat
}

function parseBody<T extends z.ZodType>(schema: T, text: string, endpoint: string, requestId?: string): z.output<T> {
  let body: unknown = {}
  if (text.trim() !== '') {
    try {
      body = JSON.parse(text)
    } catch {
      throw new TargonError(
        'BAD_RESPONSE',
        `Targon API returned a response that is not JSON for ${endpoint}: ${excerpt(text) ?? ''}`.trim(),
        {
          hint: 'retry later; a proxy or outage may be in the way',
          requestId,
        },
      )
    }
  }

  const result = schema.safeParse(body)
  if (!result.success) {
    throw new TargonError('BAD_RESPONSE', `Targon API returned an unexpected response for ${endpoint}`, {
      details: {issues: result.error.issues.map((issue) => ({message: issue.message, path: issue.path.join('.')}))},
      hint: 'retry later; if it persists, update targon-fleet',
      requestId,
    })
  }

  return result.data
}
