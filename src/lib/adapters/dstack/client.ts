/**
 * A small client of a dstack server's REST API (dstack 0.21.2: server/routers/fleets.py): the SSH fleet calls that
 * keep a fleet in sync. Every answer is bounded and checked; an error is classified by dstack's own `code` and `msg`
 * (server/utils/routers.py, core/errors.py) before its HTTP status. The token is sent, never shown.
 */
import type * as z from 'zod'
import * as zod from 'zod'

import type {Clock} from '../../core/clock.js'
import {TargonError, abortError, isAbortError} from '../../core/errors.js'
import {VERSION} from '../../core/version.js'
import {Agent, request} from '../targon/undici-subset.js'
import {readCapped} from '../targon/http.js'
import {oneLine} from '../../core/output.js'
import {type DstackFleet, DstackFleetSchema, type DstackPlan, DstackPlanSchema} from './schemas.js'
import {type DstackRun, DstackRunSchema, RUNS_PAGE, activeRunsRequest} from './runs.js'

/** The most of an answer that is read: a fleet of a few thousand hosts fits. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024

/** What dstack's refusal says, by its message: the ones a caller acts on. */
export type DstackRefusal =
  /** The fleet (or its instances) is being processed by dstack: try again later. */
  | 'busy'
  /** The fleet changed since the plan: plan again. */
  | 'changed'
  /** A kept host's parameters (its port) changed: remove it, then add it. */
  | 'hosts-changed'
  /** A hostname another fleet holds. */
  | 'host-held'
  /** A host with a job on it cannot be removed. */
  | 'in-use'
  | 'not-found'
  | 'other'

const REFUSALS: [RegExp, DstackRefusal][] = [
  [/being processed currently/i, 'busy'],
  [/resource has been changed/i, 'changed'],
  [/hosts configuration changed/i, 'hosts-changed'],
  [/already assigned to a fleet/i, 'host-held'],
  [/\bin use\b/i, 'in-use'],
]

export interface DstackConnection {
  url: string
  project: string
  token: string
}

export interface DstackClientOptions extends DstackConnection {
  clock: Clock
  signal?: AbortSignal
  requestTimeoutMs?: number
  trace?: (line: string) => void
}

export class DstackClient {
  /** The requests sent so far (each attempt counts). */
  requests = 0
  readonly project: string
  private readonly agent: Agent

  constructor(private readonly options: DstackClientOptions) {
    this.project = options.project
    this.agent = new Agent({connect: {timeout: 10_000}, keepAliveTimeout: 4000})
  }

  async close(): Promise<void> {
    if (!this.agent.closed && !this.agent.destroyed) await this.agent.close()
  }

  listFleets(): Promise<DstackFleet[]> {
    return this.call('fleets/list', {include_imported: false}, zod.array(DstackFleetSchema).max(10_000))
  }

  getPlan(spec: unknown): Promise<DstackPlan> {
    return this.call('fleets/get_plan', {spec}, DstackPlanSchema)
  }

  /** Applies a plan; `current` must be the plan's current resource as dstack answered it (null: create). */
  apply(spec: unknown, current: DstackFleet | null): Promise<DstackFleet> {
    return this.call('fleets/apply', {force: false, plan: {current_resource: current, spec}}, DstackFleetSchema)
  }

  deleteInstances(fleet: string, instanceNums: number[]): Promise<unknown> {
    return this.call('fleets/delete_instances', {instance_nums: instanceNums, name: fleet}, zod.unknown())
  }

  /** The project's active runs (runs/list is not under the project's path: it takes the project in its body). */
  listActiveRuns(): Promise<DstackRun[]> {
    return this.call('runs/list', activeRunsRequest(this.project), zod.array(DstackRunSchema).max(RUNS_PAGE), '/api/runs/list')
  }

  private async call<T extends z.ZodType>(action: string, body: unknown, schema: T, apiPath?: string): Promise<z.output<T>> {
    const path = apiPath ?? `/api/project/${encodeURIComponent(this.options.project)}/${action}`
    const timeoutMs = this.options.requestTimeoutMs ?? 60_000
    const deadline = AbortSignal.timeout(timeoutMs)
    const signal = this.options.signal ? AbortSignal.any([this.options.signal, deadline]) : deadline
    const started = this.options.clock.now()
    this.requests++
    let status: number
    let text: string
    try {
      const response = await request(this.options.url + path, {
        body: JSON.stringify(body),
        bodyTimeout: timeoutMs,
        dispatcher: this.agent,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${this.options.token}`,
          'content-type': 'application/json',
          'user-agent': `targon-fleet/${VERSION}`,
        },
        headersTimeout: timeoutMs,
        method: 'POST',
        signal,
      })
      status = response.statusCode
      text = await readCapped(
        response.body,
        MAX_ANSWER_BYTES,
        () => new TargonError('BAD_RESPONSE', `dstack answered ${action} with more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB`),
      )
    } catch (error) {
      if (this.options.signal?.aborted) throw abortError(this.options.signal)
      if (error instanceof TargonError) throw error
      const code = (error as {code?: string}).code
      if (isAbortError(error) || /TIMEOUT/.test(code ?? ''))
        throw new TargonError('TIMEOUT', `dstack did not answer ${action} within ${Math.round(timeoutMs / 1000)} s`, {
          hint: 'check that the dstack server is up (dstack-url)',
        })
      throw new TargonError(
        'NETWORK_ERROR',
        `cannot reach dstack at ${this.options.url} (${action}): ${code ?? (error as Error).message}`,
        {
          hint: 'check the dstack server and dstack-url (targon config get dstack-url, or TARGON_DSTACK_URL)',
        },
      )
    }

    this.options.trace?.(`dstack ${action} -> ${status} (${this.options.clock.now() - started} ms)`)
    let parsed: unknown
    try {
      parsed = text.trim() === '' ? null : JSON.parse(text)
    } catch {
      if (status >= 300) throw dstackError(status, undefined, action)
      throw new TargonError('BAD_RESPONSE', `dstack answered ${action} with something that is not JSON`, {
        hint: 'check that dstack-url is the dstack server itself, not a proxy page',
      })
    }

    if (status >= 300) throw dstackError(status, parsed, action)
    const result = schema.safeParse(parsed)
    if (!result.success)
      throw new TargonError('BAD_RESPONSE', `dstack answered ${action} with an unexpected shape`, {
        details: {issues: result.error.issues.slice(0, 5).map((issue) => ({message: issue.message, path: issue.path.join('.')}))},
        hint: 'check the dstack server version (dstack 0.21 is followed)',
      })
    return result.data
  }
}

/** dstack's error detail: `[{code, msg}]` (a refusal), `{code, msg}` (access), a string, or a validation list. */
function detailOf(body: unknown): {code: string | null; msg: string} | undefined {
  const detail = (body as {detail?: unknown} | null)?.detail
  const first: unknown = Array.isArray(detail) ? (detail as unknown[])[0] : detail
  if (typeof first === 'string') return {code: null, msg: first}
  if (first && typeof first === 'object') {
    const {code, msg} = first as {code?: unknown; msg?: unknown}
    if (typeof msg === 'string') return {code: typeof code === 'string' ? code : null, msg}
  }

  return undefined
}

/** Printable, one line, at most 300 characters: dstack's words are shown, but they are still an answer from afar. */
function clean(text: string): string {
  const flat = oneLine(text).trim()
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat
}

export function dstackError(status: number, body: unknown, action: string): TargonError {
  const detail = detailOf(body)
  const msg = detail ? clean(detail.msg) : undefined
  const refusal: DstackRefusal | undefined =
    detail?.code === 'resource_not_exists'
      ? 'not-found'
      : msg
        ? (REFUSALS.find(([pattern]) => pattern.test(msg))?.[1] ?? 'other')
        : undefined
  const what = `dstack answered ${status} to ${action}${msg ? `: ${msg}` : ''}`
  if (refusal === 'not-found') return new TargonError('NOT_FOUND', what, {httpStatus: status, reason: refusal})
  if (status === 401 || status === 403)
    return new TargonError('AUTH', what, {
      hint: 'check the dstack token (targon config set dstack-token, or TARGON_DSTACK_TOKEN) and that its user is a member of dstack-project',
      httpStatus: status,
    })
  if (status === 404)
    return new TargonError('CONFIG', what, {
      hint: 'check dstack-url (the server itself) and dstack-project (a project of it)',
      httpStatus: status,
    })
  if (refusal === 'host-held')
    return new TargonError('CONFIG', what, {
      hint: 'another dstack fleet holds that host: remove it there (dstack fleet delete <fleet> -i <num>), then sync again',
      httpStatus: status,
      reason: refusal,
    })
  return new TargonError('API_ERROR', what, {
    hint:
      refusal === 'busy' ? 'dstack is processing the fleet: try again in a minute' : 'retry later; if it persists, check the dstack server',
    httpStatus: status,
    reason: refusal,
  })
}

/** The refusal an error of this client carries, if any. */
export function refusalOf(error: unknown): DstackRefusal | undefined {
  return error instanceof TargonError ? (error.reason as DstackRefusal | undefined) : undefined
}
