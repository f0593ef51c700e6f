/**
 * A local dstack server double, following dstack 0.21.2 (dstackai/dstack, tag 0.21.2; the 13 commits after it, to
 * 2026-08-21, change none of the calls below): a real HTTP server on
 * 127.0.0.1 that serves the REST calls a client needs to keep an SSH fleet in sync and to see runs that wait for
 * capacity, with dstack's own rules and answers:
 * - auth by `Authorization: Bearer <token>` (server/security/permissions.py; errors: server/utils/routers.py);
 * - `/api/project/{p}/fleets/{list,get,get_plan,apply,delete,delete_instances}` (server/routers/fleets.py,
 *   server/schemas/fleets.py, server/services/fleets.py): the plan/apply handshake, busy fleets, the in-place update
 *   rules, hosts held by another fleet, instances in use;
 * - `/api/runs/list` and `/api/project/{p}/runs/get` (server/routers/runs.py, server/schemas/runs.py);
 * - `/api/users/get_my_user` (a cheap token check).
 * dstack's background work (deploying a host, ending an instance, retrying a run) is played lazily, at the next
 * request, after the delays of DstackSimulatorOptions; tests drive runs with submitRun, noCapacity, resubmit, placeRun
 * (or placeWaitingRuns) and finishRun. Not served: cloud fleets, imports, run submission over the API, events.
 */
import {createHash, randomUUID} from 'node:crypto'
import {type IncomingMessage, type Server, type ServerResponse, createServer} from 'node:http'
import type {AddressInfo, Socket} from 'node:net'

import {type Clock, REAL_CLOCK} from '../../src/lib/core/clock.js'
import {
  DstackRefusal,
  type HostEntry,
  canUpdate,
  checkCanUpdate,
  connectionOf,
  hostChanges,
  hostnameOf,
  hostsOf,
  validateFleetSpec,
  withoutSecrets,
} from './fleet-rules.js'
import {
  REQUIRED,
  ValidationFailure,
  type ValidationIssue,
  isObject,
  parseBody,
  parseModel,
  parseFleet,
  parseFleetSpec,
  pythonList,
  sameValue,
} from './models.js'
import {
  FINISHED_RUN_STATUSES,
  NO_FLEET_MESSAGE,
  NO_SPECIFIED_FLEET_MESSAGE,
  type SimJobSubmission,
  type SimRun,
  latestSubmission,
  newSubmission,
  runView,
} from './runs.js'

type Json = Record<string, unknown>

export const DSTACK_VERSION = '0.21.2'
export const DSTACK_TOKEN = 'dstack-sim-admin-token'
export const DSTACK_PROJECT = 'main'

/** InstanceStatus (core/models/instances.py). */
export type InstanceStatus = 'busy' | 'idle' | 'pending' | 'provisioning' | 'terminated' | 'terminating'

export interface SimUser {
  name: string
  /** The projects the user is a member of. */
  projects: string[]
}

export interface SimInstance {
  id: string
  name: string
  instance_num: number
  fleetId: string
  project: string
  hostname: string
  port: number
  user: string
  status: InstanceStatus
  created: number
  /** When it turned terminating (the simulator ends it terminateMs later). */
  terminatingAt?: number
  /** InstanceModel.deleted: gone from every answer, and its hostname free again. */
  deleted: boolean
  termination_reason: string | null
  termination_reason_message: string | null
  finished_at: number | null
  total_blocks: number | null
  busy_blocks: number
  /** The runs whose jobs hold it (InstanceModel.jobs): it cannot be removed while there is one. */
  jobs: Set<string>
}

export interface SimFleet {
  id: string
  name: string
  project: string
  /** The parsed spec with its keys, as dstack stores it. */
  spec: Json
  created_at: number
  status: 'active' | 'terminating' | 'terminated'
  deleted: boolean
  instances: SimInstance[]
  /** The fleet pipeline holds the fleet (FleetModel.lock_expires_at), or its instances: see processFleet. */
  lock?: FleetLock
}

interface FleetLock {
  what: 'fleet' | 'instances'
  until?: number
  requests?: number
}

export interface LoggedRequest {
  method: string
  path: string
  status: number
  at: number
  /** The request body as sent (it may hold a private key: never print it). */
  body: unknown
}

export interface DstackFault {
  /** A substring of the path, or a pattern. */
  path: RegExp | string
  /** How many requests it applies to; default: all. */
  times?: number
  status?: number
  body?: string
  delayMs?: number
  /** Answer only once this settles. */
  holdUntil?: Promise<unknown>
  /** Drop the connection without an answer, before anything is done. */
  reset?: boolean
  /** Do the work, then drop the connection without an answer. */
  dropAfterCommit?: boolean
}

export interface DstackSimulatorOptions {
  /** Tokens and their users; default: DSTACK_TOKEN for user `admin` in DSTACK_PROJECT. */
  tokens?: Record<string, SimUser>
  /** The projects of the server; default: [DSTACK_PROJECT]. */
  projects?: string[]
  /** Time from a host's apply to `idle` (dstack's SSH deploy of the shim); default 0: idle at the next request. */
  hostReadyMs?: number
  /** Whether dstack can deploy a host; one it cannot stays `pending` (failHost ends it as dstack does after 10 min). */
  reachable?: (host: {hostname: string; port: number; user: string}) => boolean
  /** Time from `terminating` to gone (the instance pipeline); default 0: gone at the next request. */
  terminateMs?: number
  /**
   * How the delete calls wait for a busy fleet before they refuse: dstack tries 10 times, 0.5 s apart
   * (services/fleets.py, _LOCK_RETRY_ATTEMPTS and _LOCK_RETRY_INTERVAL). apply never waits.
   */
  lockRetry?: {attempts: number; intervalMs: number}
  /** dstack places waiting runs by itself on idle hosts, at the next request; default false: only placeRun does. */
  placeWaitingRuns?: boolean
  /** Random trouble on every call at `rate` (0 to 1), replayable by `seed`: a 502, a reset before or after the work. */
  chaos?: {seed: number; rate: number}
  /** Adds unknown fields to every object answered, as a newer dstack would. */
  extraFields?: boolean
  clock?: Clock
}

const DEFAULT_TOKENS: Record<string, SimUser> = {[DSTACK_TOKEN]: {name: 'admin', projects: [DSTACK_PROJECT]}}

/** An HTTP answer other than 200: status and JSON body, as FastAPI and dstack's handlers send them. */
class HttpAnswer extends Error {
  constructor(
    readonly status: number,
    readonly payload: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`)
  }
}

export class DstackSimulator {
  readonly log: LoggedRequest[] = []
  readonly fleets: SimFleet[] = []
  readonly runs: SimRun[] = []
  url = ''
  private readonly options: Required<Omit<DstackSimulatorOptions, 'chaos' | 'clock' | 'reachable'>> &
    Pick<DstackSimulatorOptions, 'chaos' | 'reachable'>
  private readonly clock: Clock
  private readonly faults: (DstackFault & {remaining: number})[] = []
  private readonly chaosAttempts = new Map<string, number>()
  private calm = false
  private server?: Server
  private readonly sockets = new Set<Socket>()

  constructor(options: DstackSimulatorOptions = {}) {
    this.clock = options.clock ?? REAL_CLOCK
    this.options = {
      extraFields: false,
      hostReadyMs: 0,
      lockRetry: {attempts: 10, intervalMs: 500},
      placeWaitingRuns: false,
      projects: [DSTACK_PROJECT],
      terminateMs: 0,
      tokens: DEFAULT_TOKENS,
      ...options,
    }
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) this.sendJson(response, 500, {detail: `simulator bug: ${String(error)}`})
      })
    })
    this.server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => this.server?.listen(port, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this.url
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  // ---- control surface and ledger for tests ----

  inject(fault: DstackFault): void {
    this.faults.push({...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY})
  }

  /** Ends injected faults and chaos. */
  clearFaults(): void {
    this.faults.length = 0
    this.calm = true
  }

  requests(pathPart: RegExp | string): LoggedRequest[] {
    return this.log.filter((entry) => matchPath(entry.path, pathPart))
  }

  /** A fleet as it is now (not deleted), by name. */
  fleet(name: string, project = DSTACK_PROJECT): SimFleet | undefined {
    this.advance()
    return this.liveFleet(project, name)
  }

  /** The hosts a fleet holds now (instances not deleted): what a sync must make equal to the VMs. */
  hosts(
    name: string,
    project = DSTACK_PROJECT,
  ): {hostname: string; port: number; status: InstanceStatus; instance_num: number; busy: boolean}[] {
    return (this.fleet(name, project)?.instances ?? [])
      .filter((instance) => !instance.deleted)
      .map((instance) => ({
        busy: instance.jobs.size > 0,
        hostname: instance.hostname,
        instance_num: instance.instance_num,
        port: instance.port,
        status: instance.status,
      }))
  }

  /**
   * dstack's own processing holds the fleet (`what: 'fleet'`, FleetModel.lock_expires_at) or its instances
   * (`'instances'`), for `forMs` or for the next `requests` calls that meet it; without either, until release.
   */
  processFleet(name: string, hold: {what?: 'fleet' | 'instances'; forMs?: number; requests?: number} = {}, project = DSTACK_PROJECT): void {
    const fleet = this.requireFleet(project, name)
    fleet.lock = {
      requests: hold.requests,
      until: hold.forMs === undefined ? undefined : this.clock.now() + hold.forMs,
      what: hold.what ?? 'fleet',
    }
  }

  releaseFleet(name: string, project = DSTACK_PROJECT): void {
    this.requireFleet(project, name).lock = undefined
  }

  /** dstack gives up on a host (ssh_deploy.py): terminated, still listed, its hostname still held. */
  failHost(fleetName: string, hostname: string, message = 'Failed to add SSH instance in 600s', project = DSTACK_PROJECT): void {
    const instance = this.requireInstance(project, fleetName, hostname)
    instance.status = 'terminated'
    instance.termination_reason = message.startsWith('Failed to add') ? 'provisioning_timeout' : 'error'
    instance.termination_reason_message = message
    instance.finished_at = this.clock.now()
  }

  /**
   * A run submitted to the project that waits for capacity: `submitted` (its job looks for a fleet now) or, after a
   * round without capacity, `pending` with `retrying` (the default for a run with a retry policy). Without retry
   * (`retrySeconds: null`) a run without capacity fails instead of waiting.
   */
  submitRun(
    spec: {
      name?: string
      project?: string
      fleets?: string[]
      gpu?: string
      maxPrice?: number
      retrySeconds?: number | null
      state?: 'retrying' | 'submitted'
    } = {},
  ): SimRun {
    const now = this.clock.now()
    const [gpuName, gpuCount] = (spec.gpu ?? 'RTX6000:1').split(':')
    const run: SimRun = {
      fleet: null,
      fleets: spec.fleets ?? null,
      gpu: {count: Number(gpuCount ?? 1), name: [gpuName as string]},
      id: randomUUID(),
      last_processed_at: now,
      max_price: spec.maxPrice ?? null,
      name: spec.name ?? `run-${this.runs.length + 1}`,
      project: spec.project ?? DSTACK_PROJECT,
      retrySeconds: spec.retrySeconds === undefined ? 3600 : spec.retrySeconds,
      status: 'submitted',
      submissions: [newSubmission(0, now)],
      submitted_at: now,
      termination_reason: null,
      user: 'admin',
    }
    this.runs.push(run)
    if ((spec.state ?? 'retrying') === 'retrying') this.noCapacity(run.name)
    return run
  }

  /**
   * The run's job found no capacity (jobs_submitted.py, _apply_no_fleet_selection): the submission fails with
   * `failed_to_start_due_to_no_capacity`; with a retry policy the run goes back to `pending` (runs/active.py), else
   * it fails.
   */
  noCapacity(runName: string): void {
    const run = this.requireRun(runName)
    const now = this.clock.now()
    const job = latestSubmission(run)
    Object.assign(job, {
      last_processed_at: now,
      status: 'failed',
      termination_reason: 'failed_to_start_due_to_no_capacity',
      termination_reason_message: run.fleets ? NO_SPECIFIED_FLEET_MESSAGE : NO_FLEET_MESSAGE,
    })
    run.fleet = null
    run.last_processed_at = now
    if (run.retrySeconds === null) {
      run.status = 'failed'
      run.termination_reason = 'job_failed'
    } else run.status = 'pending'
  }

  /**
   * A pending run is submitted again (runs/pending.py): a new job submission, and the failed no-capacity ones
   * before its direct predecessor are deleted (runs/common.py, delete_superseded_no_capacity_job_submissions).
   */
  resubmit(runName: string): void {
    const run = this.requireRun(runName)
    const now = this.clock.now()
    const next = newSubmission(latestSubmission(run).submission_num + 1, now)
    run.submissions = [
      ...run.submissions.filter(
        (job) => job.submission_num >= next.submission_num - 1 || job.termination_reason !== 'failed_to_start_due_to_no_capacity',
      ),
      next,
    ]
    run.status = 'submitted'
    run.last_processed_at = now
  }

  /** dstack places the run's job on a fleet's idle host: the job runs there, and the host is busy until it ends. */
  placeRun(runName: string, at: {fleet: string; hostname: string}): void {
    this.advance()
    const run = this.requireRun(runName)
    const fleet = this.requireFleet(run.project, at.fleet)
    const instance = this.requireInstance(run.project, at.fleet, at.hostname)
    if (instance.status !== 'idle') throw new Error(`placeRun: ${at.hostname} is ${instance.status}, not idle`)
    if (!waits(run)) throw new Error(`placeRun: run ${runName} is ${run.status}`)
    this.place(run, fleet, instance)
  }

  private place(run: SimRun, fleet: SimFleet, instance: SimInstance): void {
    if (run.status === 'pending' || latestSubmission(run).status !== 'submitted') this.resubmit(run.name)
    const now = this.clock.now()
    Object.assign(latestSubmission(run), {
      instanceId: instance.id,
      job_provisioning_data: this.provisioningData(instance),
      last_processed_at: now,
      status: 'running',
    } satisfies Partial<SimJobSubmission>)
    run.status = 'running'
    run.fleet = {id: fleet.id, name: fleet.name}
    run.last_processed_at = now
    instance.jobs.add(run.id)
    instance.busy_blocks = instance.total_blocks ?? 1
    instance.status = 'busy'
  }

  /** The run ends (done, stopped by its user, or failed): its job leaves the host, which is idle again. */
  finishRun(runName: string, outcome: 'done' | 'failed' | 'stopped' = 'done'): void {
    const run = this.requireRun(runName)
    const job = latestSubmission(run)
    const now = this.clock.now()
    const [jobStatus, jobReason, runStatus, runReason] = {
      done: ['done', 'done_by_runner', 'done', 'all_jobs_done'],
      failed: ['failed', 'container_exited_with_error', 'failed', 'job_failed'],
      stopped: ['terminated', 'terminated_by_user', 'terminated', 'stopped_by_user'],
    }[outcome] as [SimJobSubmission['status'], string, SimRun['status'], string]
    Object.assign(job, {last_processed_at: now, status: jobStatus, termination_reason: jobReason})
    run.status = runStatus
    run.termination_reason = runReason
    run.last_processed_at = now
    const instance = this.fleets.flatMap((fleet) => fleet.instances).find((candidate) => candidate.id === job.instanceId)
    if (instance) {
      instance.jobs.delete(run.id)
      instance.busy_blocks = 0
      if (instance.status === 'busy') instance.status = 'idle'
    }
  }

  run(name: string): SimRun | undefined {
    return this.runs.find((run) => run.name === name)
  }

  // ---- dstack's background processing, played lazily ----

  private advance(): void {
    const now = this.clock.now()
    for (const fleet of this.fleets) {
      for (const instance of fleet.instances) {
        if (instance.deleted) continue
        if (instance.status === 'pending' && now >= instance.created + this.options.hostReadyMs && this.reachable(instance)) {
          instance.status = 'idle'
          instance.total_blocks ??= 1
        }

        if (instance.status === 'terminating' && now >= (instance.terminatingAt ?? now) + this.options.terminateMs) {
          // terminate_instance (instances/termination.py): terminated and deleted in one step.
          instance.status = 'terminated'
          instance.deleted = true
          instance.finished_at = now
        }
      }

      // FleetPipeline deletes a terminating fleet once its instances are gone.
      if (fleet.status === 'terminating' && fleet.instances.every((instance) => instance.deleted)) {
        fleet.status = 'terminated'
        fleet.deleted = true
      }

      if (fleet.lock?.until !== undefined && now >= fleet.lock.until) fleet.lock = undefined
    }

    if (this.options.placeWaitingRuns) this.placeWaitingRuns()
  }

  /**
   * A waiting run goes to the first idle host of a fleet it may use (its `fleets`, or any fleet of its project), as
   * jobs_submitted.py assigns an idle instance; without dstack's resource matching or its resubmission delay.
   */
  private placeWaitingRuns(): void {
    for (const run of this.runs.filter((candidate) => waits(candidate))) {
      const fleets = this.fleets
        .filter((fleet) => fleet.project === run.project && fleet.status === 'active' && (run.fleets?.includes(fleet.name) ?? true))
        .sort((a, b) => a.created_at - b.created_at)
      for (const fleet of fleets) {
        const idle = fleet.instances
          .filter((instance) => !instance.deleted && instance.status === 'idle')
          .sort((a, b) => a.instance_num - b.instance_num)[0]
        if (idle) {
          this.place(run, fleet, idle)
          break
        }
      }
    }
  }

  private reachable(instance: SimInstance): boolean {
    return this.options.reachable?.({hostname: instance.hostname, port: instance.port, user: instance.user}) ?? true
  }

  // ---- HTTP ----

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://sim')
    const text = await readBody(request)
    const entry: LoggedRequest = {
      at: this.clock.now(),
      body: parseOrText(text),
      method: request.method ?? 'GET',
      path: url.pathname,
      status: 0,
    }
    this.log.push(entry)

    const fault = this.takeFault(url.pathname) ?? this.chaosFor(url.pathname)
    if (fault?.delayMs) await this.clock.sleep(fault.delayMs)
    if (fault?.holdUntil) await fault.holdUntil
    if (fault?.reset) {
      entry.status = -1
      request.socket.destroy()
      return
    }

    if (fault?.status) {
      entry.status = fault.status
      this.sendRaw(response, fault.status, fault.body ?? JSON.stringify({detail: `injected ${fault.status}`}))
      return
    }

    let status = 200
    let payload: unknown
    let headers: Record<string, string> = {}
    try {
      this.advance()
      payload = await this.route(request.method ?? 'GET', url.pathname, text, request.headers.authorization)
    } catch (error) {
      if (error instanceof DstackRefusal) {
        status = 400
        payload = {detail: [{code: error.code, msg: error.msg}]}
      } else if (error instanceof ValidationFailure) {
        status = 422
        payload = {detail: error.issues}
      } else if (error instanceof HttpAnswer) {
        status = error.status
        payload = error.payload
        headers = error.headers
      } else throw error
    }

    entry.status = status
    if (fault?.dropAfterCommit) {
      entry.status = -1
      request.socket.destroy()
      return
    }

    this.sendJson(response, status, this.options.extraFields && status === 200 ? decorate(payload) : payload, headers)
  }

  private sendJson(response: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
    this.sendRaw(response, status, JSON.stringify(payload ?? null), headers)
  }

  private sendRaw(response: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
    response.statusCode = status
    response.setHeader('content-type', 'application/json')
    for (const [key, value] of Object.entries(headers)) response.setHeader(key, value)
    response.end(text)
  }

  private takeFault(path: string): DstackFault | undefined {
    const fault = this.faults.find((candidate) => candidate.remaining > 0 && matchPath(path, candidate.path))
    if (fault) fault.remaining--
    return fault
  }

  /** The trouble chaos draws for this request: from (seed, path, how many such requests came before). */
  private chaosFor(path: string): DstackFault | undefined {
    const chaos = this.options.chaos
    if (!chaos || this.calm) return undefined
    const attempt = (this.chaosAttempts.get(path) ?? 0) + 1
    this.chaosAttempts.set(path, attempt)
    const digest = createHash('sha256').update(`${chaos.seed}|${path}|${attempt}`).digest()
    if (digest.readUInt32BE(0) / 2 ** 32 >= chaos.rate) return undefined
    const kinds: DstackFault[] = [
      {body: '<html>502 Bad Gateway</html>', path, status: 502},
      {path, reset: true},
      {dropAfterCommit: true, path},
    ]
    return kinds[(digest[4] as number) % kinds.length]
  }

  private async route(method: string, path: string, text: string, authorization: string | undefined): Promise<unknown> {
    const handlers = this.handlers(path)
    if (!handlers) throw new HttpAnswer(404, {detail: 'Not Found'})
    if (method !== 'POST') throw new HttpAnswer(405, {detail: 'Method Not Allowed'}, {allow: 'POST'})
    // FastAPI decodes the JSON body before it runs any dependency.
    let body: unknown
    try {
      body = text === '' ? undefined : JSON.parse(text)
    } catch {
      throw new ValidationFailure([{input: {}, loc: ['body', 0], msg: 'JSON decode error', type: 'json_invalid'}])
    }

    const user = this.authenticate(authorization)
    // The newer dstack that extraFields plays knows its own fields when a client echoes them back.
    return handlers(user, this.options.extraFields ? undecorate(body) : body)
  }

  /** The handler of a path, after the project dependency (ProjectMember: 404 for an unknown project, 403 for a stranger). */
  private handlers(path: string): ((user: SimUser, body: unknown) => unknown) | undefined {
    if (path === '/api/users/get_my_user') return (user) => this.userWithCreds(user)
    if (path === '/api/runs/list') return (user, body) => this.listRuns(user, body)
    const match = /^\/api\/project\/([^/]+)\/(fleets|runs)\/([a-z_]+)$/.exec(path)
    if (!match) return undefined
    const project = decodeURIComponent(match[1] as string)
    const action = `${match[2]}/${match[3]}`
    const member = (user: SimUser) => {
      if (!this.options.projects.includes(project)) throw new HttpAnswer(404, {detail: {code: null, msg: 'Not found'}})
      if (!user.projects.includes(project)) throw new HttpAnswer(403, {detail: {code: null, msg: 'Access denied'}})
    }

    const routes: Record<string, (body: unknown) => unknown> = {
      'fleets/apply': (body) => this.applyPlan(project, body),
      'fleets/delete': (body) => this.deleteFleets(project, body),
      'fleets/delete_instances': (body) => this.deleteInstances(project, body),
      'fleets/get': (body) => this.getFleet(project, body),
      'fleets/get_plan': (body) => this.getPlan(project, body),
      'fleets/list': (body) => this.listFleets(project, body),
      'runs/get': (body) => this.getRun(project, body),
    }
    const handler = routes[action]
    return (
      handler &&
      ((user, body) => {
        member(user)
        return handler(body)
      })
    )
  }

  /** Authenticated (permissions.py): HTTPBearer, then the token's user. */
  private authenticate(authorization: string | undefined): SimUser {
    const [scheme, token] = (authorization ?? '').split(/\s+/, 2)
    // FastAPI 0.122 and later (dstack pins no version): 401 with a WWW-Authenticate header.
    if (!token || scheme?.toLowerCase() !== 'bearer')
      throw new HttpAnswer(401, {detail: 'Not authenticated'}, {'www-authenticate': 'Bearer'})
    const user = this.options.tokens[token]
    if (!user) throw new HttpAnswer(403, {detail: {code: null, msg: 'Invalid token'}})
    return user
  }

  /**
   * UserWithCreds (core/models/users.py; routers/users.py, get_my_user): the answer holds the token itself and the
   * user's private key, so a client must never log it.
   */
  private userWithCreds(user: SimUser): Json {
    const token = Object.entries(this.options.tokens).find(([, candidate]) => candidate === user)?.[0] ?? ''
    return {
      active: true,
      created_at: '2026-01-01T00:00:00+00:00',
      creds: {token},
      email: null,
      global_role: 'admin',
      id: createHash('sha256')
        .update(user.name)
        .digest('hex')
        .replace(/^(.{8})(.{4})(.{3})(.{3})(.{12}).*/, '$1-$2-4$3-8$4-$5'),
      permissions: {can_create_projects: true},
      ssh_private_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nsimulated user key\n-----END OPENSSH PRIVATE KEY-----\n',
      ssh_public_key: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAISimulatedUserKey ${user.name}`,
      username: user.name,
    }
  }

  // ---- fleets (server/services/fleets.py) ----

  private listFleets(project: string, body: unknown): unknown {
    if (body !== undefined && body !== null) parseBody(body, {include_imported: false})
    return this.fleets
      .filter((fleet) => fleet.project === project && !fleet.deleted)
      .sort((a, b) => b.created_at - a.created_at)
      .map((fleet) => this.fleetJson(fleet))
  }

  private getFleet(project: string, body: unknown): unknown {
    const request = parseBody(body, {name: null, id: null})
    if (request.id === null && request.name === null) throw new DstackRefusal('name or id must be specified')
    // By name: not a deleted fleet; by id: deleted ones too.
    const fleet =
      request.id !== null
        ? this.fleets.find((candidate) => candidate.project === project && candidate.id === request.id)
        : this.liveFleet(project, String(request.name))
    if (!fleet) throw new DstackRefusal('Resource not found', 'resource_not_exists')
    return this.fleetJson(fleet)
  }

  private getPlan(project: string, body: unknown): unknown {
    const request = parseBody(body, {spec: REQUIRED}, {spec: parseFleetSpec})
    const spec = request.spec as Json
    validateFleetSpec(spec)
    const name = (spec.configuration as Json).name
    const current = name === null ? undefined : this.liveFleet(project, name as string)
    const action = current && canUpdate(current.spec, spec) ? 'update' : 'create'
    this.checkHostsNotYetAdded(spec, current?.id)
    return {
      action,
      current_resource: current ? this.fleetJson(current) : null,
      effective_spec: withoutSecrets(spec),
      max_offer_price: null,
      offers: [],
      project_name: project,
      // The spec as sent, keys included (only effective_spec and current_resource are stripped).
      spec,
      total_offers: 0,
      user: 'admin',
    }
  }

  private applyPlan(project: string, body: unknown): unknown {
    const request = parseBody(body, {plan: REQUIRED, force: REQUIRED}, {plan: parsePlanInput})
    const plan = request.plan as Json
    const spec = plan.spec as Json
    validateFleetSpec(spec)
    const name = (spec.configuration as Json).name
    const fleet = name === null ? undefined : this.liveFleet(project, name as string)
    if (!fleet) return this.fleetJson(this.createFleet(project, spec))
    if (fleet.lock?.what === 'fleet' && this.meetLock(fleet))
      throw new DstackRefusal('Failed to update fleet: fleet is being processed currently. Try again later.')
    return this.fleetJson(this.updateFleet(fleet, spec, plan.current_resource as Json | null, request.force === true))
  }

  /** _create_fleet: one instance per listed host, numbered by position (duplicates included); no hostname check. */
  private createFleet(project: string, spec: Json): SimFleet {
    const configuration = spec.configuration as Json
    configuration.name ??= `fleet-${randomUUID().slice(0, 8)}`
    const fleet: SimFleet = {
      created_at: this.clock.now(),
      deleted: false,
      id: randomUUID(),
      instances: [],
      name: String(configuration.name),
      project,
      spec,
      status: 'active',
    }
    fleet.instances = hostsOf(spec).map((host, index) => this.newInstance(fleet, spec, host, index))
    this.fleets.push(fleet)
    return fleet
  }

  /** _update_fleet: the handshake, the in-place rules, then hosts added and removed, all or nothing. */
  private updateFleet(fleet: SimFleet, spec: Json, currentResource: Json | null, force: boolean): SimFleet {
    if (
      !force &&
      (currentResource === null || currentResource.id !== fleet.id || !sameValue(currentResource.spec, withoutSecrets(fleet.spec)))
    )
      throw new DstackRefusal('Failed to apply plan. Resource has been changed. Try again or use force apply.')
    checkCanUpdate(fleet.spec, spec)
    const {added, removed} = hostChanges(hostsOf(fleet.spec), hostsOf(spec))
    const live = fleet.instances.filter((instance) => !instance.deleted)
    const taken = new Set(live.map((instance) => instance.instance_num))
    const removedNums = live.filter((instance) => removed.has(instance.hostname)).map((instance) => instance.instance_num)
    if (added.size > 0) this.checkHostsNotYetAdded(spec, fleet.id)
    const newInstances = [...added.values()].map((host) => {
      const num = lowestUnused(taken)
      taken.add(num)
      return this.newInstance(fleet, spec, host, num)
    })
    if (removedNums.length > 0) this.checkRemovable(fleet, removedNums)
    fleet.spec = spec
    fleet.instances.push(...newInstances)
    if (removedNums.length > 0) this.terminate(fleet, removedNums)
    return fleet
  }

  /** _check_ssh_hosts_not_yet_added: a hostname that an instance of another fleet holds, in any project. */
  private checkHostsNotYetAdded(spec: Json, fleetId: string | undefined): void {
    const held = new Set(
      this.fleets
        .filter((fleet) => fleet.id !== fleetId)
        .flatMap((fleet) => fleet.instances)
        .filter((instance) => !instance.deleted)
        .map((instance) => instance.hostname),
    )
    const taken = hostsOf(spec)
      .map((host) => hostnameOf(host))
      .filter((hostname) => held.has(hostname))
    if (taken.length > 0) throw new DstackRefusal(`Instances [${taken.join(', ')}] are already assigned to a fleet.`)
  }

  private deleteFleets(project: string, body: unknown): Promise<null> {
    const request = parseBody(body, {names: REQUIRED})
    return this.deleteWithLocks(project, request.names as string[], null)
  }

  private deleteInstances(project: string, body: unknown): Promise<null> {
    const request = parseBody(body, {name: REQUIRED, instance_nums: REQUIRED})
    return this.deleteWithLocks(project, [String(request.name)], request.instance_nums as number[])
  }

  /** delete_fleets: wait for the fleets' and then the instances' locks (10 tries, 0.5 s apart), then end them. */
  private async deleteWithLocks(project: string, names: string[], instanceNums: number[] | null): Promise<null> {
    const fleets = names.map((name) => this.liveFleet(project, name)).filter((fleet): fleet is SimFleet => fleet !== undefined)
    const scope = instanceNums === null ? 'fleets' : 'fleet instances'
    for (const what of ['fleet', 'instances'] as const) {
      const busy = () => fleets.filter((fleet) => fleet.lock?.what === what && this.lockHolds(fleet))
      for (let attempt = 1; busy().length > 0 && attempt < this.options.lockRetry.attempts; attempt++) {
        await this.clock.sleep(this.options.lockRetry.intervalMs)
        this.advance()
      }

      const holding = busy()
      if (holding.length > 0) {
        for (const fleet of holding) this.meetLock(fleet)
        const processed = what === 'fleet' ? 'fleets are' : 'fleet instances are'
        throw new DstackRefusal(`Failed to delete ${scope}: ${processed} being processed currently. Try again later.`)
      }
    }

    for (const fleet of fleets) this.checkRemovable(fleet, instanceNums)
    for (const fleet of fleets) {
      this.terminate(fleet, instanceNums)
      if (instanceNums === null) fleet.status = 'terminating'
    }

    return null
  }

  /** is_fleet_in_use and _terminate_fleet_instances' refusal: a host with a job is never removed. */
  private checkRemovable(fleet: SimFleet, instanceNums: number[] | null): void {
    const inUse = fleet.instances.filter((instance) => !instance.deleted && instance.jobs.size > 0)
    const selected = instanceNums === null ? inUse : inUse.filter((instance) => instanceNums.includes(instance.instance_num))
    const activeRuns = this.runs.filter((run) => run.fleet?.id === fleet.id && !FINISHED_RUN_STATUSES.includes(run.status))
    if (selected.length > 0 || (instanceNums === null && inUse.length === 0 && activeRuns.length > 0)) {
      if (instanceNums !== null)
        throw new DstackRefusal(`Failed to delete fleet ${fleet.name} instances ${pythonList(instanceNums)}. Fleet instances are in use.`)
      throw new DstackRefusal(`Failed to delete fleet ${fleet.name}. Fleet is in use.`)
    }
  }

  /** _terminate_fleet_instances: a terminated instance is deleted at once, any other turns terminating. */
  private terminate(fleet: SimFleet, instanceNums: number[] | null): void {
    for (const instance of fleet.instances) {
      if (instance.deleted || (instanceNums !== null && !instanceNums.includes(instance.instance_num))) continue
      if (instance.status === 'terminated') {
        instance.deleted = true
        continue
      }

      instance.termination_reason = 'terminated_by_user'
      if (instance.status !== 'terminating') instance.terminatingAt = this.clock.now()
      instance.status = 'terminating'
    }
  }

  private lockHolds(fleet: SimFleet): boolean {
    const lock = fleet.lock
    if (!lock) return false
    return lock.requests !== undefined ? lock.requests > 0 : lock.until === undefined || this.clock.now() < lock.until
  }

  /** A request meets a lock: true if the lock holds; a lock for N requests counts this one. */
  private meetLock(fleet: SimFleet): boolean {
    if (!this.lockHolds(fleet)) return false
    const lock = fleet.lock as FleetLock
    if (lock.requests !== undefined) lock.requests--
    return true
  }

  private newInstance(fleet: SimFleet, spec: Json, host: HostEntry, num: number): SimInstance {
    const connection = connectionOf(spec, host)
    const blocks = (typeof host === 'string' ? null : host.blocks) ?? (spec.configuration as Json).blocks
    return {
      busy_blocks: 0,
      created: this.clock.now(),
      deleted: false,
      finished_at: null,
      fleetId: fleet.id,
      hostname: connection.hostname,
      id: randomUUID(),
      instance_num: num,
      jobs: new Set(),
      name: `${fleet.name}-${num}`,
      port: connection.port,
      project: fleet.project,
      status: 'pending',
      termination_reason: null,
      termination_reason_message: null,
      total_blocks: blocks === 'auto' ? null : Number(blocks),
      user: connection.user,
    }
  }

  // ---- runs (server/services/runs/__init__.py) ----

  private listRuns(user: SimUser, body: unknown): unknown {
    const request = parseBody(body, {
      project_name: null,
      repo_id: null,
      username: null,
      only_active: false,
      include_jobs: true,
      job_submissions_limit: null,
      prev_submitted_at: null,
      prev_run_id: null,
      limit: 100,
      ascending: false,
    })
    if (request.project_name === null && request.repo_id !== null) return []
    const projects = request.project_name === null ? user.projects : user.projects.filter((project) => project === request.project_name)
    const limit = request.job_submissions_limit === null ? 10 : Number(request.job_submissions_limit)
    const order = request.ascending === true ? 1 : -1
    return this.runs
      .filter((run) => projects.includes(run.project))
      .filter((run) => request.only_active !== true || !FINISHED_RUN_STATUSES.includes(run.status))
      .sort((a, b) => order * (a.submitted_at - b.submitted_at))
      .slice(0, Number(request.limit))
      .map((run) => {
        const view = runView(run, limit)
        return request.include_jobs === false ? {...view, jobs: [], latest_job_submission: null} : view
      })
  }

  private getRun(project: string, body: unknown): unknown {
    const request = parseBody(body, {run_name: null, id: null})
    if (request.id === null && request.run_name === null) throw new DstackRefusal('run_name or id must be specified')
    const run = this.runs.find(
      (candidate) =>
        candidate.project === project && (request.id !== null ? candidate.id === request.id : candidate.name === request.run_name),
    )
    if (!run) throw new DstackRefusal('Run not found', 'resource_not_exists')
    return runView(run)
  }

  // ---- views and look-ups ----

  /** Fleet, as fleet_model_to_fleet answers it: keys removed, instances not deleted, by instance number. */
  private fleetJson(fleet: SimFleet): Json {
    return {
      created_at: new Date(fleet.created_at).toISOString(),
      id: fleet.id,
      instances: fleet.instances
        .filter((instance) => !instance.deleted)
        .sort((a, b) => a.instance_num - b.instance_num)
        .map((instance) => this.instanceJson(fleet, instance)),
      name: fleet.name,
      project_name: fleet.project,
      spec: withoutSecrets(fleet.spec),
      status: fleet.status,
      status_message: null,
    }
  }

  /** instance_model_to_instance, for an SSH instance (create_ssh_instance_model's offer and provisioning data). */
  private instanceJson(fleet: SimFleet, instance: SimInstance): Json {
    const provisioning = this.provisioningData(instance)
    return {
      availability_zone: null,
      backend: 'remote',
      busy_blocks: instance.busy_blocks,
      created: new Date(instance.created).toISOString(),
      finished_at: instance.finished_at === null ? null : new Date(instance.finished_at).toISOString(),
      fleet_id: fleet.id,
      fleet_name: fleet.name,
      gpu_driver: null,
      health_status: 'healthy',
      hostname: instance.hostname,
      id: instance.id,
      instance_num: instance.instance_num,
      instance_type: provisioning.instance_type,
      job_name: null,
      name: instance.name,
      price: 0,
      project_name: instance.project,
      region: 'remote',
      status: instance.status,
      termination_reason: instance.termination_reason,
      termination_reason_message: instance.termination_reason_message,
      total_blocks: instance.total_blocks,
      unreachable: false,
    }
  }

  /** JobProvisioningData of an SSH host (create_ssh_instance_model: a placeholder `ssh` type until the shim reports). */
  private provisioningData(instance: SimInstance): Json {
    return {
      availability_zone: null,
      backend: 'remote',
      backend_data: '',
      base_backend: null,
      dockerized: true,
      gpu_driver: null,
      hostname: instance.hostname,
      instance_id: instance.name,
      instance_network: null,
      instance_type: {
        name: 'ssh',
        resources: {cpu_arch: null, cpus: 2, description: '', disk: {size_mib: 102400}, gpus: [], memory_mib: 8, spot: false},
      },
      internal_ip: null,
      price: 0,
      public_ip_enabled: true,
      region: 'remote',
      reservation: null,
      ssh_port: instance.port,
      ssh_proxy: null,
      username: instance.user,
    }
  }

  private liveFleet(project: string, name: string): SimFleet | undefined {
    return this.fleets.find((fleet) => fleet.project === project && fleet.name === name && !fleet.deleted)
  }

  private requireFleet(project: string, name: string): SimFleet {
    const fleet = this.liveFleet(project, name)
    if (!fleet) throw new Error(`no fleet ${name} in project ${project}`)
    return fleet
  }

  private requireInstance(project: string, fleetName: string, hostname: string): SimInstance {
    const instance = this.requireFleet(project, fleetName).instances.find(
      (candidate) => !candidate.deleted && candidate.hostname === hostname,
    )
    if (!instance) throw new Error(`no host ${hostname} in fleet ${fleetName}`)
    return instance
  }

  private requireRun(name: string): SimRun {
    const run = this.run(name)
    if (!run) throw new Error(`no run ${name}`)
    return run
  }
}

/** ApplyFleetPlanInput: exactly `spec` and `current_resource`. */
function parsePlanInput(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  return parseModel(value, loc, issues, {spec: REQUIRED, current_resource: null}, {current_resource: parseFleet, spec: parseFleetSpec})
}

/** A run that waits for capacity: submitted, or pending again after a round without it. */
function waits(run: SimRun): boolean {
  return run.status === 'submitted' || run.status === 'pending'
}

function lowestUnused(taken: Set<number>): number {
  let num = 0
  while (taken.has(num)) num++
  return num
}

function matchPath(path: string, pattern: RegExp | string): boolean {
  return typeof pattern === 'string' ? path.includes(pattern) : pattern.test(path)
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function parseOrText(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text)
  } catch {
    return text
  }
}

function undecorate(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => undecorate(item))
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).flatMap(([key, item]) => (key === 'x_future_field' ? [] : [[key, undecorate(item)]])))
  return value
}

/** Adds unknown fields everywhere, as a newer dstack would. */
function decorate(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => decorate(item))
  if (isObject(value))
    return {...Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decorate(item)])), x_future_field: {nested: [1, 'two']}}
  return value
}
