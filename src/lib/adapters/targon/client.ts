/**
 * The Targon v3 API, one method per endpoint. Responses are validated by the schemas in
 * schemas.ts; transport, retries and error mapping live in http.ts.
 */
import * as z from 'zod'

import {TargonError} from '../../core/errors.js'
import {HttpTransport, type HttpOptions} from './http.js'
import {
  type CreateWorkloadRequest,
  CreateWorkloadRequestSchema,
  CreditsSchema,
  OrgSchema,
  ProjectSchema,
  RawOfferSchema,
  SparseWorkloadSchema,
  SshKeySchema,
  VersionSchema,
  VmImageSchema,
  type InvalidWorkload,
  type Workload,
  WorkloadSchema,
  WorkloadSshKeysSchema,
  WorkloadStateSchema,
  checkListedWorkload,
  listSchema,
  pageSchema,
} from './schemas.js'

export const PAGE_LIMIT = 100

/**
 * A history page is optional knowledge, never worth holding up a command (a `down` above all): a short deadline, one
 * retry at most, and a body bound of its own (a page of 100 events is a few tens of KiB).
 */
export const HISTORY_PAGE = {attempts: 2, maxBytes: 1024 * 1024, timeoutMs: 10_000}
/** How long a DELETE answer may take: Targon answers once the teardown is done (one production client waits 180 s). */
export const DELETE_ANSWER_MS = 180_000
const MAX_PAGES = 1000

/** Inventory items are validated one by one, so that one malformed offer cannot hide the others. */
const InventorySchema = listSchema(z.unknown())

export interface InventoryResult {
  offers: z.output<typeof RawOfferSchema>[]
  /** Items that failed validation, as human-readable reasons. */
  skipped: string[]
}

export interface WorkloadFilter {
  name?: string
  status?: string
  project_id?: string
}

export class TargonClient {
  readonly http: HttpTransport

  constructor(options: HttpOptions | HttpTransport) {
    this.http = options instanceof HttpTransport ? options : new HttpTransport(options)
  }

  /** A client on the same connection pool whose calls obey another abort signal. */
  withSignal(signal: AbortSignal | undefined): TargonClient {
    return new TargonClient(this.http.withSignal(signal))
  }

  async close(): Promise<void> {
    await this.http.close()
  }

  async inventory(): Promise<InventoryResult> {
    const items = await this.http.call({
      auth: false,
      method: 'GET',
      path: '/tha/v3/inventory',
      query: {gpu: 'true', type: 'vm'},
      retry: 'safe',
      schema: InventorySchema,
    })
    const result: InventoryResult = {offers: [], skipped: []}
    for (const [index, item] of items.entries()) {
      const parsed = RawOfferSchema.safeParse(item)
      if (parsed.success) {
        result.offers.push(parsed.data)
      } else {
        const name =
          item && typeof item === 'object' && typeof (item as {name?: unknown}).name === 'string'
            ? (item as {name: string}).name
            : `#${index}`
        result.skipped.push(
          `inventory item ${name}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'item'} ${issue.message}`).join('; ')}`,
        )
      }
    }

    return result
  }

  async version() {
    return this.http.call({method: 'GET', path: '/tha/v3/version', retry: 'safe', schema: VersionSchema})
  }

  async listOrgs() {
    return this.listAll('/tha/v3/orgs', OrgSchema)
  }

  /** One org by its slug: 404 when there is none, 403 when this key may not use it. */
  async getOrg(slug: string) {
    return this.http.call({method: 'GET', path: `/tha/v3/orgs/${encodeURIComponent(slug)}`, retry: 'safe', schema: OrgSchema})
  }

  /** The org's credits (USD). */
  async getCredits(org: string) {
    return this.http.call({method: 'GET', path: orgPath(org, 'credits'), retry: 'safe', schema: CreditsSchema})
  }

  async listProjects(org: string) {
    return this.listAll(orgPath(org, 'projects'), ProjectSchema)
  }

  async createProject(org: string, name: string) {
    return this.http.call({body: {name}, method: 'POST', path: orgPath(org, 'projects'), retry: 'rate-limit', schema: ProjectSchema})
  }

  async listSshKeys(org: string) {
    return this.listAll(orgPath(org, 'ssh-keys'), SshKeySchema)
  }

  async getSshKey(org: string, uid: string) {
    return this.http.call({method: 'GET', path: orgPath(org, `ssh-keys/${encodeURIComponent(uid)}`), retry: 'safe', schema: SshKeySchema})
  }

  async createSshKey(org: string, key: {name: string; ssh_key: string}) {
    return this.http.call({body: key, method: 'POST', path: orgPath(org, 'ssh-keys'), retry: 'rate-limit', schema: SshKeySchema})
  }

  async deleteSshKey(org: string, uid: string): Promise<void> {
    await this.http.call({
      method: 'DELETE',
      path: orgPath(org, `ssh-keys/${encodeURIComponent(uid)}`),
      retry: 'rate-limit',
      schema: z.unknown(),
    })
  }

  async listVmImages(org: string) {
    return this.http.call({method: 'GET', path: orgPath(org, 'workloads/vm-images'), retry: 'safe', schema: listSchema(VmImageSchema)})
  }

  /** Retried only on 429 (not processed): after an unclear failure the caller reconciles by listing by name. */
  async createWorkload(org: string, request: CreateWorkloadRequest) {
    const body = CreateWorkloadRequestSchema.parse(request)
    return this.http.call({body, method: 'POST', path: orgPath(org, 'workloads'), retry: 'rate-limit', schema: SparseWorkloadSchema})
  }

  /** The org's VMs; items that fail the boundary's checks come back apart, as `invalid` (see checkListedWorkload). */
  async listWorkloads(org: string, filter: WorkloadFilter = {}): Promise<{workloads: Workload[]; invalid: InvalidWorkload[]}> {
    const result: {workloads: Workload[]; invalid: InvalidWorkload[]} = {invalid: [], workloads: []}
    for (const item of await this.listAll(orgPath(org, 'workloads'), z.unknown(), {type: 'VM', ...filter})) {
      const checked = checkListedWorkload(item)
      if ('workload' in checked) result.workloads.push(checked.workload)
      else result.invalid.push(checked.invalid)
    }

    return result
  }

  async getWorkload(org: string, uid: string) {
    return this.http.call({method: 'GET', path: workloadPath(org, uid), retry: 'safe', schema: WorkloadSchema})
  }

  /** The uids of the SSH keys a workload was created with (a full read: the listing's summaries lack them). */
  async getWorkloadSshKeys(org: string, uid: string) {
    return this.http.call({method: 'GET', path: workloadPath(org, uid), retry: 'safe', schema: WorkloadSshKeysSchema})
  }

  /** Retried only on 429 (not processed): after an unclear failure the caller reads the state. */
  async deployWorkload(org: string, uid: string) {
    return this.http.call({method: 'POST', path: `${workloadPath(org, uid)}/deploy`, retry: 'rate-limit', schema: SparseWorkloadSchema})
  }

  async getWorkloadState(org: string, uid: string) {
    return this.http.call({method: 'GET', path: `${workloadPath(org, uid)}/state`, retry: 'safe', schema: WorkloadStateSchema})
  }

  /**
   * One page of a workload's history, items unchecked (the caller checks each, so that one hostile item cannot hide
   * the others). Its order is not documented. Bounded by HISTORY_PAGE.
   */
  async workloadEventsPage(
    org: string,
    uid: string,
    cursor: string | undefined,
  ): Promise<{items: unknown[]; nextCursor: string | undefined}> {
    return this.http.call({
      method: 'GET',
      maxAttempts: HISTORY_PAGE.attempts,
      maxBytes: HISTORY_PAGE.maxBytes,
      path: `${workloadPath(org, uid)}/events`,
      query: {cursor, limit: PAGE_LIMIT},
      retry: 'safe',
      schema: pageSchema(z.unknown()),
      timeoutMs: Math.min(HISTORY_PAGE.timeoutMs, this.http.options.requestTimeoutMs),
    })
  }

  /**
   * The VM's console log (`type=serial`), as lines. The API documents text/plain; a JSON answer (a string, an
   * array of lines, or an object holding either) is read too.
   */
  async consoleLog(
    org: string,
    uid: string,
    options: {tail?: number; timeoutMs?: number; onTruncated?: () => void} = {},
  ): Promise<string[]> {
    const text = await this.http.call({
      method: 'GET',
      onTruncated: options.onTruncated ?? (() => {}),
      path: `${workloadPath(org, uid)}/logs`,
      query: {tail: options.tail, type: 'serial'},
      raw: true,
      retry: 'safe',
      schema: z.string(),
      timeoutMs: options.timeoutMs,
    })
    const lines = consoleLines(text)
    return options.tail === undefined ? lines : lines.slice(-options.tail)
  }

  /**
   * Targon tears the VM down before it answers, which can take minutes: the answer has its own deadline, never
   * shorter than DELETE_ANSWER_MS. Retried only on 429 (not processed); other failures are settled by polling the state.
   */
  async deleteWorkload(org: string, uid: string): Promise<void> {
    const timeoutMs = Math.max(DELETE_ANSWER_MS, this.http.options.requestTimeoutMs)
    await this.http.call({method: 'DELETE', path: workloadPath(org, uid), retry: 'rate-limit', schema: z.unknown(), timeoutMs})
  }

  /** Follows cursors until the end; `next_cursor` of "", null or missing ends the list. */
  private async listAll<T extends z.ZodType>(
    path: string,
    item: T,
    query: Record<string, string | undefined> = {},
  ): Promise<z.output<T>[]> {
    const schema = pageSchema(item)
    const items: z.output<T>[] = []
    const seen = new Set<string>()
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.http.call({method: 'GET', path, query: {...query, cursor, limit: PAGE_LIMIT}, retry: 'safe', schema})
      items.push(...(result.items as z.output<T>[]))
      if (!result.nextCursor) return items
      if (seen.has(result.nextCursor)) {
        throw new TargonError('BAD_RESPONSE', `Targon API repeated a page cursor for GET ${path}`, {hint: 'retry later'})
      }

      seen.add(result.nextCursor)
      cursor = result.nextCursor
    }

    throw new TargonError('BAD_RESPONSE', `Targon API returned more than ${MAX_PAGES} pages for GET ${path}`, {hint: 'retry later'})
  }
}

/** Lines of a console answer: plain text, or JSON holding the text or the lines. */
export function consoleLines(text: string): string[] {
  let body: unknown = text
  const trimmed = text.trim()
  if (trimmed.startsWith('{') || trimmed.startsWith('[') || trimmed.startsWith('"')) {
    try {
      body = JSON.parse(trimmed)
    } catch {
      body = text
    }
  }

  const lines = linesOf(body, 0)
  while (lines.length > 0 && lines.at(-1) === '') lines.pop()
  return lines
}

const CONSOLE_KEYS = ['logs', 'log', 'lines', 'output', 'items', 'data', 'message', 'line', 'text', 'content']

function linesOf(body: unknown, depth: number): string[] {
  if (typeof body === 'string') return body.replaceAll('\r\n', '\n').split('\n')
  if (typeof body === 'number' || typeof body === 'boolean') return [String(body)]
  if (depth > 3 || body === null || typeof body !== 'object') return []
  if (Array.isArray(body)) return body.flatMap((item) => linesOf(item, depth + 1))
  const record = body as Record<string, unknown>
  const key = CONSOLE_KEYS.find((candidate) => record[candidate] !== undefined)
  return key ? linesOf(record[key], depth + 1) : []
}

function orgPath(org: string, rest: string): string {
  return `/tha/v3/orgs/${encodeURIComponent(org)}/${rest}`
}

function workloadPath(org: string, uid: string): string {
  return orgPath(org, `workloads/${encodeURIComponent(uid)}`)
}
