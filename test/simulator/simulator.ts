/**
 * A local Targon v3 API simulator: a real HTTP server on 127.0.0.1 with in-memory state,
 * the workload state machine, a billing ledger, a request log and fault injection.
 * Faithful to what is known of the Targon v3 API; where its behaviour is uncertain, each variant is a switch.
 */
import {createHash, randomBytes} from 'node:crypto'
import {type IncomingMessage, type Server, type ServerResponse, createServer} from 'node:http'
import type {AddressInfo, Socket} from 'node:net'

import {type Clock, REAL_CLOCK, isoNow} from '../../src/lib/core/clock.js'
import {DEFAULT_TOKEN, type OfferSeed, type OrgSeed, SEED_IMAGES, SEED_OFFERS, SEED_ORGS, SEED_TOKENS, SERVICE_TOKENS} from './seed.js'

export type InventoryVariant = 'a' | 'b' | 'both'
export type Provisioning = 'error' | 'normal' | 'stuck'
/**
 * How DELETE behaves. `targon` plays what Targon really does: 204 for a running or provisioning workload,
 * whose record then shows `deleted` and soon flips to an `error` tombstone that stays listed for a while; a
 * no-op 204 for a tombstone; HTTP 500 for a registered, suspended or crashed workload; answers that take as
 * long as the teardown. `ideal` answers 204 in every state, and the record then shows `deleted` or 404.
 */
export type DeleteLifecycle = 'ideal' | 'targon'

export interface VmEndpoint {
  public_ip: string
  ssh_port: number
}

/**
 * How a deployed workload's state unfolds over time (after deploy, in ms): the address shows this long after deploy
 * while the state still says provisioning, and the state says running this long after it. The VM's SSH is the
 * VM's own business (test/vm/farm.ts). Without it, the state says running after bootDelayMs, with its address.
 */
export interface DeployTiming {
  addressMs: number
  runningMs: number
}

export interface SimulatorOptions {
  tokens?: Record<string, string[]>
  orgs?: OrgSeed[]
  offers?: OfferSeed[]
  inventoryVariant?: InventoryVariant
  /** Time from deploy to running. */
  bootDelayMs?: number
  /** Replaces bootDelayMs for first deploys (not wakes), per workload when a function; undefined keeps bootDelayMs. */
  deployTiming?: DeployTiming | ((workload: SimWorkload) => DeployTiming | undefined)
  /** See DeleteLifecycle; default `targon`. */
  deleteLifecycle?: DeleteLifecycle
  /** targon: how long the DELETE answer takes (the teardown runs before it answers). */
  deleteLatencyMs?: number
  /** targon: how long after the teardown the `deleted` record flips to an `error` tombstone; null: never. */
  tombstoneBounceMs?: number | null
  /** targon: how long a tombstone stays listed and answers GET before it is 404. */
  tombstoneLifetimeMs?: number
  /** ideal: time from DELETE to gone. */
  teardownDelayMs?: number
  /** ideal: what a GET answers for a deleted workload. */
  afterDelete?: '404' | 'deleted'
  /** What a second DELETE during teardown does. */
  secondDelete?: '409' | 'suspend'
  /** Upper bound of items per page, to exercise pagination. */
  maxPageSize?: number
  /** End-of-list marker: null (default) or "". */
  emptyCursor?: boolean
  /** Create and deploy answer with `{uid}` / `{}` only. */
  sparse?: boolean
  /** Adds unknown fields to every object the simulator returns. */
  extraFields?: boolean
  /** Workloads carry their resource object (GPU model and count); false sends only resource_name, as some servers do. */
  resourceDetail?: boolean
  /** Added to a workload's price relative to its offer (price changed between listing and create). */
  priceDrift?: number
  /** How deployed workloads end: run normally, stay provisioning forever, or turn to error; per workload when a function. */
  provisioning?: Provisioning | ((workload: SimWorkload) => Provisioning)
  /**
   * Boots the simulated VM of a deployed workload and provides its SSH endpoint; default 127.0.0.1:22.
   * It is called at deploy, so the VM boots while the workload is provisioning, as a real one does;
   * the workload turns running once both the boot delay has passed and the VM is up.
   */
  onBoot?: (workload: SimWorkload) => Promise<VmEndpoint>
  /**
   * A first deploy is answered once its VM has booted and the boot delay has passed (without a deploy timing), so that
   * the first look at the state says running: a deploy that Targon answers late. Its answer is the workload as the
   * deploy found it (provisioning). Every first deploy is held, a wake of a registered workload by down too, and a
   * fault after the commit (dropAfterCommit, statusAfterCommit) comes after the hold. Off, it is answered at once and
   * the VM boots while the workload is provisioning.
   */
  answerDeployOnceBooted?: boolean
  /** The address the state gives once the workload runs, in place of the booted VM's: an address that moves at running. */
  runningEndpoint?: (workload: SimWorkload, booted: VmEndpoint) => VmEndpoint
  /** Called when a workload is deleted, to stop its simulated VM. */
  onDeleted?: (workload: SimWorkload) => Promise<void> | void
  /** How GET …/logs answers: text/plain (as documented, the default) or JSON `{logs: "..."}`. */
  consoleFormat?: 'json' | 'text'
  /** Capacity that appears and disappears, counted from start(); see scheduleCapacity. */
  capacitySchedule?: CapacityChange[]
  /**
   * How create and deploy refuse when the offer has nothing available: 503 with reason WORKLOAD_VM_NO_CAPACITY (the
   * default, as the official SDK's tests show for sandboxes), or the older 409 NO_CAPACITY.
   */
  capacityRefusal?: '409' | '503'
  /**
   * Random transient trouble on every call, at `rate` (0 to 1): a 503 without a reason, a 502 after the change was
   * made, a reset before or after it, a 429. Each request's draw comes from (seed, method, path with uids masked, how
   * many such requests came before), so that a seed replays. clearFaults() ends it.
   */
  chaos?: {seed: number; rate: number}
  /** The time it reads and its delays: the real clock unless a test runs client and simulator on one fake clock. */
  clock?: Clock
  /** The uid a created workload gets, by its name (a hostile answer, say); default: wrk- and random hex. */
  createdUid?: (name: string) => string
  /** A provisioning workload shows `pending`, then `powering_on`, for the first two thirds of its boot delay. */
  transitional?: boolean
  /** What every workload reports as `frozen_cost_per_hour` (null by default; the official fixtures show 0.01). */
  frozenCostPerHour?: number | null
  /** The first N deploys answer 503 TEMPORARY without deploying (the official SDK re-sends them). */
  temporaryDeploys?: number
  /** An org quota: a create beyond this many live workloads in the org answers 429 WORKLOAD_VM_SESSION_LIMIT. */
  workloadLimit?: number
  /**
   * Whether listing items carry project_id (the official SDK's summary shape leaves it out; the full workload has
   * it). Default true.
   */
  summaryProjectId?: boolean
  /**
   * How GET credits behaves: `falling` (the default) answers the org's seed credits minus price × billed time of its
   * workloads, as a wallet that Targon debits continuously would; `unchanged` answers the seed credits whatever
   * bills (a wallet debited in batches, or never); `unreadable` answers 403 (a key that may not read the wallet).
   */
  credits?: 'falling' | 'unchanged' | 'unreadable'
  /**
   * GET O/workloads/{uid}/events (the workload history, docs/concepts/deletion.md): `kept` (the default) pages every status change and the delete;
   * `missing` answers 404 (an API without the endpoint); `empty` answers no events; `sparse` only new_status and
   * created_at; `hostile` answers junk (wrong types, escapes, huge text, bad dates) instead of events.
   */
  history?: 'empty' | 'hostile' | 'kept' | 'missing' | 'sparse'
  /**
   * GET …/events still answers once the record has left the listing (a history kept longer than its tombstone), as
   * Targon may or may not do (docs/concepts/deletion.md). Default false: it is 404 with the record.
   */
  historyOutlivesListing?: boolean
  /** The order of a history's events: undocumented, so both are played. Default newest first. */
  historyOrder?: 'newest-first' | 'oldest-first'
  /** The most events per history page (after the request's limit). Default 50. */
  historyPageSize?: number
}

/** One event of a workload's history, as Targon's SDK names the fields. */
export interface SimEvent {
  new_status: string
  created_at: string
  event_type: string
  message: string
}

/** The halted statuses of Targon's SDK: a VM in one still bills here, as a suspended one does. */
const HALTED_STATUSES = ['powering_off', 'stopped', 'frozen']

/** At `atMs`, the offer named `offer` lists `available` units (deploys and deletes count from there as usual). */
export interface CapacityChange {
  atMs: number
  offer: string
  available: number
}

export interface Fault {
  method?: string
  /** A substring of the path, or a pattern. */
  path: RegExp | string
  /** How many requests it applies to; default: all. */
  times?: number
  status?: number
  body?: string
  contentType?: string
  retryAfter?: string
  delayMs?: number
  /** Answer only once this settles: a request held for exactly as long as a test needs, with no timing to guess. */
  holdUntil?: Promise<unknown>
  /** Drop the connection without an answer, before anything is done. */
  reset?: boolean
  /** Do the work (e.g. commit a create), then drop the connection without an answer. */
  dropAfterCommit?: boolean
  /** Do the work, then answer this status anyway (e.g. a DELETE that says 500 but happened). */
  statusAfterCommit?: number
}

export interface SimWorkload {
  uid: string
  org: string
  name: string
  image: string
  resource_name: string
  ssh_keys: string[]
  password: string
  project_id: string | null
  cost_per_hour: number
  status: string
  message: string
  created_at: string
  updated_at: string
  deployedAt?: number
  /** When billing began: the first deploy (a wake does not restart it). */
  billedFrom?: number
  /** When the state turned running (the latest time, after a wake). */
  runningAt?: number
  /** 0 for the first workload deployed on this simulator, 1 for the next... */
  deployIndex?: number
  deleteRequestedAt?: number
  deletedAt?: number
  /** Left the listing before its tombstone's lifetime ran out (ageOutTombstones). */
  agedOut?: boolean
  /** An `error` record that is the remains of a completed delete (billing stopped), not a crash. */
  tombstone?: boolean
  endpoint?: VmEndpoint
  /** Redeployed after a suspension or crash. */
  woken?: boolean
  /** The simulated VM's boot (onBoot), once started; `done` settles when it has. */
  boot?: {endpoint?: VmEndpoint; error?: string; done?: Promise<void>}
  /** Console lines written after boot (appendConsole). */
  console?: string[]
  /** Every status change, oldest first (GET …/events). */
  events?: SimEvent[]
}

export interface LoggedRequest {
  method: string
  path: string
  query: Record<string, string>
  status: number
  at: number
  /** Whether the request carried an Authorization header (whatever its value). */
  authorized: boolean
}

interface SimSshKey {
  uid: string
  org: string
  name: string
  public_key_raw: string
  created_at: string
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message)
  }
}

const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/
/** Statuses that bill (with `error` unless it is a tombstone); `registered` is not deployed and is taken as not billing. */
/** A text/plain answer (the console log). */
class TextBody {
  constructor(readonly text: string) {}
}

const BILLING = new Set(['provisioning', 'running', 'suspended', 'error', 'powering_off', 'stopped', 'frozen'])

export class TargonSimulator {
  readonly options: Required<
    Omit<SimulatorOptions, 'chaos' | 'clock' | 'createdUid' | 'deployTiming' | 'onBoot' | 'onDeleted' | 'runningEndpoint'>
  > &
    Pick<SimulatorOptions, 'chaos' | 'createdUid' | 'deployTiming' | 'onBoot' | 'onDeleted' | 'runningEndpoint'>
  readonly workloads = new Map<string, SimWorkload>()
  readonly sshKeys = new Map<string, SimSshKey>()
  readonly projects = new Map<string, {uid: string; org: string; name: string}>()
  readonly offers: OfferSeed[]
  readonly orgs: OrgSeed[]
  readonly log: LoggedRequest[] = []
  private readonly faults: (Fault & {remaining: number})[] = []
  private server?: Server
  private deployCount = 0
  private temporaryDeploysLeft = 0
  private calm = false
  private readonly chaosAttempts = new Map<string, number>()
  private readonly inFlight: Record<string, number> = {}
  /** The most requests of each method that were in flight at once. */
  readonly maxInFlight: Record<string, number> = {}
  private readonly deletesInFlight = new Map<string, number>()
  /** uids that ever had two DELETEs in flight at once (a client must never do that). */
  readonly doubleDeletes = new Set<string>()
  /** Every status a state or listing answer showed, in order. */
  readonly servedStatuses: string[] = []
  private readonly sockets = new Set<Socket>()
  /** Scheduled capacity changes, by epoch ms, soonest first. */
  private readonly capacityChanges: (Omit<CapacityChange, 'atMs'> & {at: number})[] = []
  url = ''

  private readonly clock: Clock

  constructor(options: SimulatorOptions = {}) {
    this.clock = options.clock ?? REAL_CLOCK
    this.options = {
      afterDelete: '404',
      answerDeployOnceBooted: false,
      bootDelayMs: 300,
      consoleFormat: 'text',
      deleteLatencyMs: 50,
      deleteLifecycle: 'targon',
      emptyCursor: false,
      extraFields: false,
      inventoryVariant: 'b',
      maxPageSize: 1000,
      offers: SEED_OFFERS,
      orgs: SEED_ORGS,
      priceDrift: 0,
      provisioning: 'normal',
      capacitySchedule: [],
      capacityRefusal: '503',
      credits: 'falling',
      frozenCostPerHour: null,
      transitional: false,
      temporaryDeploys: 0,
      workloadLimit: Number.POSITIVE_INFINITY,
      summaryProjectId: true,
      resourceDetail: true,
      secondDelete: '409',
      sparse: false,
      teardownDelayMs: 100,
      tokens: SEED_TOKENS,
      tombstoneBounceMs: 300,
      tombstoneLifetimeMs: 10 * 60_000,
      history: 'kept',
      historyOrder: 'newest-first',
      historyOutlivesListing: false,
      historyPageSize: 50,
      ...options,
    }
    this.offers = this.options.offers.map((offer) => ({...offer}))
    this.temporaryDeploysLeft = this.options.temporaryDeploys
    this.orgs = this.options.orgs.map((org) => ({...org}))
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) this.send(response, 500, {error: String(error), reason: 'SIMULATOR_BUG'})
      })
    })
    this.server.on('connection', (socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    await new Promise<void>((resolve) => this.server?.listen(port, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    this.scheduleCapacity(this.options.capacitySchedule)
    return this.url
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  // ---- control surface for tests ----

  inject(fault: Fault): void {
    this.faults.push({...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY})
  }

  clearFaults(): void {
    this.faults.length = 0
    this.calm = true
  }

  /** The trouble chaos draws for this request, if any. */
  private chaosFor(method: string, path: string): ChaosTrouble | undefined {
    const chaos = this.options.chaos
    if (!chaos || this.calm) return undefined
    const key = `${method} ${path.replace(/\/(wrk|shk|prj)-[0-9a-f]+/g, '/$1-*')}`
    const attempt = (this.chaosAttempts.get(key) ?? 0) + 1
    this.chaosAttempts.set(key, attempt)
    const digest = createHash('sha256').update(`${chaos.seed}|${key}|${attempt}`).digest()
    if (digest.readUInt32BE(0) / 2 ** 32 >= chaos.rate) return undefined
    const kinds: ChaosTrouble[] = method === 'GET' ? ['503', 'reset', '429'] : ['503', '502-after', 'reset', 'reset-after', '429']
    return kinds[(digest[4] as number) % kinds.length]
  }

  /** Capacity over time, counted from now: e.g. an offer sold out now that lists 2 units after 3 s. */
  scheduleCapacity(changes: CapacityChange[]): void {
    const now = this.clock.now()
    for (const {atMs, ...change} of changes) this.capacityChanges.push({...change, at: now + atMs})
    this.capacityChanges.sort((a, b) => a.at - b.at)
    this.applyCapacity()
  }

  /** Applies the capacity changes that are due (lazily, like the rest of the simulator's clock). */
  private applyCapacity(): void {
    while (this.capacityChanges.length > 0 && (this.capacityChanges[0]?.at ?? 0) <= this.clock.now()) {
      const change = this.capacityChanges.shift() as (typeof this.capacityChanges)[number]
      const offer = this.offers.find((candidate) => candidate.name === change.offer)
      if (!offer) throw new Error(`scheduleCapacity: no offer ${change.offer}`)
      offer.available = change.available
    }
  }

  /** Workloads that exist: anything not deleted and not a tombstone (registered ones included). */
  live(): SimWorkload[] {
    return [...this.workloads.values()].filter((workload) => !isGone(this.advance(workload)))
  }

  /** A workload as it is now (the simulator applies the passage of time lazily). */
  current(uid: string): SimWorkload | undefined {
    const workload = this.workloads.get(uid)
    return workload && this.advance(workload)
  }

  /** Every tombstone listed now leaves the listing at once, as if its lifetime had run out (no test waits for it). */
  ageOutTombstones(): void {
    for (const workload of this.workloads.values()) if (workload.status === 'deleted' || workload.tombstone) workload.agedOut = true
  }

  /** The billing ledger: workloads that cost money now (provisioning, running, suspended, crashed). */
  billing(): SimWorkload[] {
    return this.live().filter((workload) => BILLING.has(workload.status))
  }

  /** Seconds billed for a workload, from its first deploy to its delete (suspended and crashed time included). */
  billableSeconds(uid: string): number {
    const workload = this.workloads.get(uid)
    if (workload?.billedFrom === undefined) return 0
    return ((workload.deletedAt ?? this.clock.now()) - workload.billedFrom) / 1000
  }

  /** USD billed so far to an org's workloads: price × billed time. */
  billedUsd(slug: string): number {
    return [...this.workloads.values()]
      .filter((workload) => workload.org === slug)
      .reduce((sum, workload) => sum + (this.billableSeconds(workload.uid) / 3600) * workload.cost_per_hour, 0)
  }

  /** The org's credits now (see SimulatorOptions.credits). */
  creditsOf(org: OrgSeed): number {
    return this.options.credits === 'unchanged' ? org.credits : org.credits - this.billedUsd(org.slug)
  }

  requests(method: string, pathPart: RegExp | string): LoggedRequest[] {
    return this.log.filter((entry) => entry.method === method && matchPath(entry.path, pathPart))
  }

  /** Deletes a workload behind the client's back. */
  deleteExternally(uid: string): void {
    const workload = this.workloads.get(uid)
    if (workload) this.finishDelete(workload)
  }

  /**
   * Renames a workload behind the client's back, past the naming rule that create enforces: what a hostile or buggy
   * server could answer after create (a config injection, `.ssh`, chat markup).
   */
  renameHostile(uid: string, name: string): void {
    const workload = this.workloads.get(uid)
    if (!workload) return
    workload.name = name
    touch(workload, this.clock.now())
  }

  /** Suspends a workload: its VM stops, the record keeps billing, and DELETE answers 500 until it is redeployed. */
  suspend(uid: string): void {
    this.halt(uid, 'suspended', '')
  }

  /**
   * Halts a workload as Targon's SDK statuses allow (`stopped`, `powering_off` or `frozen`): its VM stops, the record
   * keeps billing, DELETE answers 500 and a deploy brings it back, as for a suspended one.
   */
  powerOff(uid: string, status: 'frozen' | 'powering_off' | 'stopped' = 'stopped'): void {
    this.halt(uid, status, '')
  }

  /** Crashes a workload: its VM stops, the record shows `error` and keeps billing, and DELETE answers 500. */
  crash(uid: string): void {
    this.halt(uid, 'error', 'simulated crash: kernel panic')
  }

  private halt(uid: string, status: string, message: string): void {
    const workload = this.workloads.get(uid)
    if (!workload) return
    setStatus(workload, status, message, this.clock.now())
    workload.endpoint = undefined
    workload.boot = undefined
    touch(workload, this.clock.now())
    void this.options.onDeleted?.(workload)
  }

  /** Writes lines to a workload's serial console (after its boot lines). */
  appendConsole(uid: string, ...lines: string[]): void {
    const workload = this.workloads.get(uid)
    if (workload) workload.console = [...(workload.console ?? []), ...lines]
  }

  /** The serial console of a workload as the VM would have written it: boot lines, then how it ended. */
  consoleOf(workload: SimWorkload): string[] {
    if (workload.deployedAt === undefined && workload.status === 'registered') return []
    const lines = [
      '[    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) #49-Ubuntu SMP',
      `[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=LABEL=cloudimg-rootfs console=ttyS0 (${workload.name})`,
      '[    0.412733] pci 0000:00:05.0: [10de:2bb1] type 00 class 0x030200',
      '[    1.902114] EXT4-fs (vda1): mounted filesystem with ordered data mode',
    ]
    if (workload.status === 'provisioning') return [...lines, '[    2.113201] cloud-init[612]: Cloud-init v. 24.3 running init-local']
    if (workload.status === 'error' && workload.message.includes('kernel panic'))
      return [
        ...lines,
        '[  311.200417] BUG: unable to handle page fault for address: ffffb0c1c0a3f000',
        '[  311.200981] Kernel panic - not syncing: Fatal exception',
        '[  311.201455] ---[ end Kernel panic - not syncing: Fatal exception ]---',
      ]
    if (workload.status === 'error')
      return [
        ...lines,
        '[    2.500102] cloud-init[612]: failed to bring up network: no carrier on ens5',
        '[    2.500640] reboot: System halted',
      ]
    return [
      ...lines,
      '[    3.004512] cloud-init[712]: Cloud-init v. 24.3 finished',
      '[  OK  ] Started ssh.service - OpenBSD Secure Shell server.',
      `Ubuntu 24.04.1 LTS ${workload.name} ttyS0`,
      `${workload.name} login: `,
      ...(workload.console ?? []),
    ]
  }

  /** Adds a workload directly (e.g. one created by another tool). */
  addWorkload(fields: Partial<SimWorkload> & {name: string; org?: string}): SimWorkload {
    const offer = this.offers[0] as OfferSeed
    const now = isoNow(this.clock)
    const workload: SimWorkload = {
      cost_per_hour: offer.cost_per_hour,
      created_at: now,
      image: SEED_IMAGES[0]?.name ?? '',
      message: '',
      org: this.orgs[0]?.slug ?? 'acme',
      password: 'preset-password',
      project_id: null,
      resource_name: offer.name,
      ssh_keys: [],
      status: 'registered',
      uid: newUid('wrk'),
      updated_at: now,
      ...fields,
    }
    // One added as deployed has billed since then.
    workload.billedFrom ??= workload.deployedAt
    workload.events ??= [
      {created_at: workload.created_at, event_type: 'STATUS_CHANGED', message: workload.message, new_status: workload.status},
    ]
    this.workloads.set(workload.uid, workload)
    return workload
  }

  // ---- HTTP ----

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? 'GET'
    this.inFlight[method] = (this.inFlight[method] ?? 0) + 1
    this.maxInFlight[method] = Math.max(this.maxInFlight[method] ?? 0, this.inFlight[method])
    const deleting = method === 'DELETE' ? /\/workloads\/([^/]+)$/.exec(request.url?.split('?')[0] ?? '')?.[1] : undefined
    if (deleting) {
      const count = (this.deletesInFlight.get(deleting) ?? 0) + 1
      this.deletesInFlight.set(deleting, count)
      if (count > 1) this.doubleDeletes.add(decodeURIComponent(deleting))
    }

    try {
      await this.handleCounted(request, response, method)
    } finally {
      this.inFlight[method] = (this.inFlight[method] ?? 1) - 1
      if (deleting) this.deletesInFlight.set(deleting, (this.deletesInFlight.get(deleting) ?? 1) - 1)
    }
  }

  private async handleCounted(request: IncomingMessage, response: ServerResponse, method: string): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://sim')
    const body = await readBody(request)
    const entry: LoggedRequest = {
      at: this.clock.now(),
      authorized: request.headers.authorization !== undefined,
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: 0,
    }
    this.log.push(entry)
    this.applyCapacity()

    const trouble = this.chaosFor(method, url.pathname)
    const fault: Fault | undefined = this.takeFault(method, url.pathname) ?? (trouble && chaosFault(trouble))
    if (fault?.delayMs) await this.clock.sleep(fault.delayMs)
    if (fault?.holdUntil) await fault.holdUntil
    if (fault?.reset) {
      entry.status = -1
      request.socket.destroy()
      return
    }

    if (fault?.status) {
      entry.status = fault.status
      const headers: Record<string, string> = {}
      if (fault.retryAfter) headers['retry-after'] = fault.retryAfter
      this.sendRaw(
        response,
        fault.status,
        fault.body ?? JSON.stringify({error: `injected ${fault.status}`, reason: 'INJECTED'}),
        fault.contentType ?? 'application/json',
        headers,
      )
      return
    }

    let status: number
    let payload: unknown
    try {
      ;[status, payload] = await this.route(method, url, body, request.headers.authorization)
    } catch (error) {
      if (!(error instanceof HttpFailure)) throw error
      status = error.status
      payload = {error: error.message, reason: error.reason}
    }

    entry.status = status
    if (fault?.dropAfterCommit) {
      entry.status = -1
      request.socket.destroy()
      return
    }

    if (fault?.statusAfterCommit) {
      entry.status = fault.statusAfterCommit
      this.send(response, fault.statusAfterCommit, {error: 'injected after commit', reason: 'INJECTED'})
      return
    }

    this.send(response, status, payload)
  }

  private takeFault(method: string, path: string): Fault | undefined {
    const fault = this.faults.find(
      (candidate) => candidate.remaining > 0 && (!candidate.method || candidate.method === method) && matchPath(path, candidate.path),
    )
    if (fault) fault.remaining--
    return fault
  }

  private send(response: ServerResponse, status: number, payload: unknown): void {
    if (payload instanceof TextBody) {
      this.sendRaw(response, status, payload.text, 'text/plain; charset=utf-8')
      return
    }

    if (status === 204 || payload === undefined) {
      this.sendRaw(response, status, '', undefined)
      return
    }

    this.sendRaw(response, status, JSON.stringify(this.options.extraFields ? decorate(payload) : payload), 'application/json')
  }

  private sendRaw(
    response: ServerResponse,
    status: number,
    text: string,
    contentType: string | undefined,
    headers: Record<string, string> = {},
  ): void {
    response.statusCode = status
    response.setHeader('x-request-id', `req-${randomBytes(6).toString('hex')}`)
    if (contentType) response.setHeader('content-type', contentType)
    for (const [key, value] of Object.entries(headers)) response.setHeader(key, value)
    response.end(text)
  }

  private async route(method: string, url: URL, body: string, authorization: string | undefined): Promise<[number, unknown]> {
    const path = url.pathname
    if (method === 'GET' && path === '/tha/v3/inventory') return [200, this.inventory(url.searchParams)]
    if (method === 'GET' && path === '/tha/v3/version')
      return [200, {buildDate: '2026-10-01', gitHash: 'sim', name: 'targon-simulator', version: '3.7.0'}]

    const orgs = this.authenticate(authorization)
    if (method === 'GET' && path === '/tha/v3/orgs') {
      const member = !SERVICE_TOKENS.includes(/^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '')
      return [
        200,
        this.page(
          this.orgs.filter((org) => member && orgs.includes(org.slug)).map((org) => orgView(org, this.creditsOf(org))),
          url.searchParams,
        ),
      ]
    }

    const match = /^\/tha\/v3\/orgs\/([^/]+)(?:\/(.*))?$/.exec(path)
    if (!match) throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
    const slug = decodeURIComponent(match[1] as string)
    const org = this.orgs.find((candidate) => candidate.slug === slug)
    if (!org) throw new HttpFailure(404, 'NOT_FOUND', `organization ${slug} not found`)
    if (!orgs.includes(slug)) throw new HttpFailure(403, 'FORBIDDEN', `no access to organization ${slug}`)
    const rest = match[2] ?? ''
    const segments = rest.split('/').map((segment) => decodeURIComponent(segment))

    if (rest === '' && method === 'GET') return [200, orgView(org, this.creditsOf(org))]
    if (rest === 'credits' && method === 'GET') {
      if (this.options.credits === 'unreadable') throw new HttpFailure(403, 'FORBIDDEN', 'this token may not read the wallet')
      return [200, {credits: this.creditsOf(org), currency: 'USD'}]
    }
    if (segments[0] === 'projects') return this.projectsRoute(method, org, segments, body, url)
    if (segments[0] === 'ssh-keys') return this.sshKeysRoute(method, org, segments, body, url)
    if (segments[0] === 'workloads') return this.workloadsRoute(method, org, segments, body, url)
    throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
  }

  private authenticate(authorization: string | undefined): string[] {
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1]
    const orgs = token ? this.options.tokens[token] : undefined
    if (!orgs) throw new HttpFailure(401, 'UNAUTHORIZED', 'unauthorized')
    return orgs
  }

  private inventory(query: URLSearchParams): unknown[] {
    const type = query.get('type')
    const gpu = query.get('gpu')
    if (type && !['rental', 'storage', 'vm'].includes(type)) throw new HttpFailure(400, 'INVALID_QUERY', 'invalid query parameter')
    if (gpu && !['false', 'true'].includes(gpu)) throw new HttpFailure(400, 'INVALID_QUERY', 'invalid query parameter')
    return this.offers
      .filter((offer) => (gpu === null ? true : String(offer.gpu) === gpu) && (type === null || type === 'vm'))
      .map((offer) => offerView(offer, this.options.inventoryVariant))
  }

  private page<T>(items: T[], query: URLSearchParams): {items: T[]; next_cursor: string | null} {
    const limit = Math.min(Number(query.get('limit') ?? 50) || 50, 1000, this.options.maxPageSize)
    const cursor = query.get('cursor')
    const offset = cursor ? Number(Buffer.from(cursor, 'base64url').toString()) : 0
    if (!Number.isInteger(offset) || offset < 0) throw new HttpFailure(400, 'INVALID_CURSOR', 'invalid cursor')
    const slice = items.slice(offset, offset + limit)
    const next = offset + limit < items.length ? Buffer.from(String(offset + limit)).toString('base64url') : null
    return {items: slice, next_cursor: next ?? (this.options.emptyCursor ? '' : null)}
  }

  private projectsRoute(method: string, org: OrgSeed, segments: string[], body: string, url: URL): [number, unknown] {
    const mine = [...this.projects.values()].filter((project) => project.org === org.slug)
    if (segments.length === 1 && method === 'GET')
      return [
        200,
        this.page(
          mine.map(({name, uid}) => ({name, uid})),
          url.searchParams,
        ),
      ]
    if (segments.length === 1 && method === 'POST') {
      const {name} = parseStrict(body, ['name'], ['name'])
      const existing = mine.find((project) => project.name === name)
      if (existing) return [200, {name: existing.name, uid: existing.uid}]
      const project = {name: String(name), org: org.slug, uid: newUid('prj')}
      this.projects.set(project.uid, project)
      return [201, {name: project.name, uid: project.uid}]
    }

    throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
  }

  private sshKeysRoute(method: string, org: OrgSeed, segments: string[], body: string, url: URL): [number, unknown] {
    const view = (key: SimSshKey) => ({
      created_at: key.created_at,
      name: key.name,
      public_key_raw: key.public_key_raw,
      uid: key.uid,
      updated_at: key.created_at,
    })
    if (segments.length === 1 && method === 'GET') {
      return [200, this.page([...this.sshKeys.values()].filter((key) => key.org === org.slug).map(view), url.searchParams)]
    }

    if (segments.length === 1 && method === 'POST') {
      const {name, ssh_key: sshKey} = parseStrict(body, ['name', 'ssh_key'], ['name', 'ssh_key'])
      if (typeof sshKey !== 'string' || !/^ssh-(ed25519|rsa) [A-Za-z0-9+/=]+/.test(sshKey))
        throw new HttpFailure(400, 'INVALID_SSH_KEY', 'ssh_key is not a public key')
      const key: SimSshKey = {
        created_at: isoNow(this.clock),
        name: String(name),
        org: org.slug,
        public_key_raw: sshKey,
        uid: newUid('shk'),
      }
      this.sshKeys.set(key.uid, key)
      return [201, view(key)]
    }

    const key = this.sshKeys.get(segments[1] ?? '')
    if (!key || key.org !== org.slug) throw new HttpFailure(404, 'NOT_FOUND', 'ssh key not found')
    if (segments.length === 2 && method === 'GET') return [200, view(key)]
    if (segments.length === 2 && method === 'DELETE') {
      this.sshKeys.delete(key.uid)
      return [204, undefined]
    }

    throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
  }

  private async workloadsRoute(method: string, org: OrgSeed, segments: string[], body: string, url: URL): Promise<[number, unknown]> {
    if (segments.length === 2 && segments[1] === 'vm-images' && method === 'GET') return [200, SEED_IMAGES]
    if (segments.length === 1 && method === 'GET') return [200, this.listWorkloads(org, url.searchParams)]
    if (segments.length === 1 && method === 'POST') return this.createWorkload(org, body)

    const workload = this.workloads.get(segments[1] ?? '')
    const keptHistory = this.options.historyOutlivesListing && segments.length === 3 && segments[2] === 'events'
    if (!workload || workload.org !== org.slug || !(this.answers(this.advance(workload)) || keptHistory))
      throw new HttpFailure(404, 'NOT_FOUND', 'workload not found')

    if (segments.length === 2 && method === 'GET') return [200, this.workloadView(workload)]
    if (segments.length === 3 && segments[2] === 'state' && method === 'GET') return [200, this.stateView(workload)]
    if (segments.length === 3 && segments[2] === 'deploy' && method === 'POST') return this.deployAnswered(org, workload)
    if (segments.length === 3 && segments[2] === 'logs' && method === 'GET') return [200, this.consoleView(workload, url.searchParams)]
    if (segments.length === 3 && segments[2] === 'events' && method === 'GET') return [200, this.historyView(workload, url.searchParams)]
    if (segments.length === 2 && method === 'DELETE')
      return this.options.deleteLifecycle === 'targon' ? this.deleteAsTargon(workload) : this.deleteIdeally(workload)
    throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
  }

  /** Whether a record still answers GET and shows in the listing (tombstones do for a while). */
  private answers(workload: SimWorkload): boolean {
    if (workload.status !== 'deleted' && !workload.tombstone) return true
    if (this.options.deleteLifecycle === 'ideal') return this.options.afterDelete === 'deleted'
    return !workload.agedOut && this.clock.now() < (workload.deletedAt ?? 0) + this.options.tombstoneLifetimeMs
  }

  private listWorkloads(org: OrgSeed, query: URLSearchParams) {
    const items = [...this.workloads.values()]
      .filter((workload) => workload.org === org.slug)
      .filter((workload) => this.answers(this.advance(workload)))
      .filter((workload) => !query.get('name') || workload.name === query.get('name'))
      .filter((workload) => !query.get('status') || workload.status === query.get('status'))
      .filter((workload) => !query.get('project_id') || workload.project_id === query.get('project_id'))
      .map((workload) => this.summaryView(workload))
    return this.page(items, query)
  }

  private createWorkload(org: OrgSeed, body: string): [number, unknown] {
    const fields = parseStrict(
      body,
      ['name', 'type', 'image', 'resource_name', 'ssh_keys', 'vm_config', 'project_id'],
      ['name', 'type', 'image', 'resource_name', 'vm_config'],
    )
    const name = String(fields.name)
    if (!NAME_PATTERN.test(name)) throw new HttpFailure(400, 'INVALID_NAME', 'name must be 1-32 lowercase letters, digits or hyphens')
    if (fields.type !== 'VM') throw new HttpFailure(400, 'INVALID_TYPE', 'only VM workloads are simulated')
    const offer = this.offers.find((candidate) => candidate.name === fields.resource_name)
    if (!offer) throw new HttpFailure(400, 'INVALID_RESOURCE', `unknown resource_name ${String(fields.resource_name)}`)
    if (offer.available <= 0) throw this.noCapacity(offer.name)
    const live = [...this.workloads.values()].filter((workload) => workload.org === org.slug && this.billsOrWaits(workload))
    if (live.length >= this.options.workloadLimit)
      throw new HttpFailure(429, 'WORKLOAD_VM_SESSION_LIMIT', `the org may have at most ${this.options.workloadLimit} workloads`)
    if (!SEED_IMAGES.some((image) => image.name === fields.image))
      throw new HttpFailure(404, 'IMAGE_NOT_FOUND', `unknown image ${String(fields.image)}`)
    const vmConfig = fields.vm_config as Record<string, unknown> | null
    if (!vmConfig || typeof vmConfig !== 'object' || typeof vmConfig.password !== 'string' || vmConfig.password.length < 4) {
      throw new HttpFailure(400, 'INVALID_VM_CONFIG', 'vm_config.password must have at least 4 characters')
    }

    const unknownVmKeys = Object.keys(vmConfig).filter((key) => !['hostname', 'password'].includes(key))
    if (unknownVmKeys.length > 0) throw new HttpFailure(400, 'INVALID_JSON_BODY', `unknown field vm_config.${unknownVmKeys[0]}`)
    const keys = Array.isArray(fields.ssh_keys) ? fields.ssh_keys.map(String) : []
    for (const uid of keys) {
      const key = this.sshKeys.get(uid)
      if (!key || key.org !== org.slug) throw new HttpFailure(400, 'INVALID_SSH_KEY', `unknown ssh key ${uid}`)
    }

    const projectId = fields.project_id
    if (projectId !== undefined && (typeof projectId !== 'string' || this.projects.get(projectId)?.org !== org.slug))
      throw new HttpFailure(404, 'PROJECT_NOT_FOUND', `unknown project ${JSON.stringify(projectId)}`)

    const now = isoNow(this.clock)
    const workload: SimWorkload = {
      cost_per_hour: Math.round((offer.cost_per_hour + this.options.priceDrift) * 100) / 100,
      created_at: now,
      image: String(fields.image),
      message: '',
      name,
      org: org.slug,
      password: vmConfig.password,
      project_id: typeof fields.project_id === 'string' ? fields.project_id : null,
      resource_name: offer.name,
      ssh_keys: keys,
      status: 'registered',
      uid: this.options.createdUid?.(name) ?? newUid('wrk'),
      updated_at: now,
    }
    setStatus(workload, 'registered', '', this.clock.now())
    this.workloads.set(workload.uid, workload)
    return [201, this.options.sparse ? {uid: workload.uid} : this.workloadView(workload)]
  }

  /** A deploy, answered at once, or with answerDeployOnceBooted (a first deploy) once the workload runs. */
  private async deployAnswered(org: OrgSeed, workload: SimWorkload): Promise<[number, unknown]> {
    const first = workload.status === 'registered'
    const answer = this.deploy(org, workload)
    if (this.options.answerDeployOnceBooted && first && !this.timingOf(workload) && workload.boot?.done) {
      await workload.boot.done
      const left = (workload.deployedAt ?? 0) + this.runningDelay(workload) - this.clock.now()
      if (left > 0) await this.clock.sleep(left)
    }

    return answer
  }

  private deploy(org: OrgSeed, workload: SimWorkload): [number, unknown] {
    if (
      workload.status === 'suspended' ||
      HALTED_STATUSES.includes(workload.status) ||
      (workload.status === 'error' && !workload.tombstone)
    )
      return this.wake(workload)
    if (workload.status !== 'registered') return [200, this.options.sparse ? {} : this.summaryView(workload)]
    if (this.temporaryDeploysLeft > 0) {
      this.temporaryDeploysLeft--
      throw new HttpFailure(503, 'TEMPORARY', 'temporarily unavailable, try again')
    }

    const offer = this.offers.find((candidate) => candidate.name === workload.resource_name)
    if (!offer || offer.available <= 0) throw this.noCapacity(workload.resource_name)
    if (this.creditsOf(org) < workload.cost_per_hour) throw new HttpFailure(402, 'INSUFFICIENT_CREDITS', 'insufficient credits')
    offer.available--
    setStatus(workload, 'provisioning', '', this.clock.now())
    workload.deployedAt = this.clock.now()
    workload.billedFrom = workload.deployedAt
    workload.deployIndex = this.deployCount++
    if (this.provisioningOf(workload) === 'normal') this.startBoot(workload)
    touch(workload, this.clock.now())
    return [200, this.options.sparse ? {} : this.summaryView(workload)]
  }

  private noCapacity(resource: string): HttpFailure {
    return this.options.capacityRefusal === '409'
      ? new HttpFailure(409, 'NO_CAPACITY', `no capacity for ${resource}`)
      : new HttpFailure(503, 'WORKLOAD_VM_NO_CAPACITY', `no capacity for ${resource}`)
  }

  /** Counts toward the org's workload quota: anything not deleted. */
  private billsOrWaits(workload: SimWorkload): boolean {
    return workload.status !== 'deleted' && !workload.tombstone
  }

  /** Redeploying a suspended or crashed workload brings it back to running (a wake boots normally). */
  private wake(workload: SimWorkload): [number, unknown] {
    setStatus(workload, 'provisioning', '', this.clock.now())
    workload.deployedAt = this.clock.now()
    workload.woken = true
    this.startBoot(workload)
    touch(workload, this.clock.now())
    return [200, this.options.sparse ? {} : this.summaryView(workload)]
  }

  private async deleteAsTargon(workload: SimWorkload): Promise<[number, unknown]> {
    if (workload.status === 'deleted' || workload.tombstone) return [204, undefined]
    if (
      workload.status === 'registered' ||
      workload.status === 'suspended' ||
      workload.status === 'error' ||
      HALTED_STATUSES.includes(workload.status)
    ) {
      throw new HttpFailure(500, 'INTERNAL', 'internal server error')
    }

    if (workload.deleteRequestedAt !== undefined) return this.secondDelete(workload)
    workload.deleteRequestedAt = this.clock.now()
    // The teardown runs before the answer; it completes even when the client gave up waiting.
    if (this.options.deleteLatencyMs > 0) await this.clock.sleep(this.options.deleteLatencyMs)
    this.finishDelete(workload)
    return [204, undefined]
  }

  private secondDelete(workload: SimWorkload): [number, unknown] {
    if (this.options.secondDelete === 'suspend') {
      setStatus(workload, 'suspended', workload.message, this.clock.now())
      touch(workload, this.clock.now())
      return [204, undefined]
    }

    throw new HttpFailure(409, 'DELETE_IN_PROGRESS', 'deletion already in progress')
  }

  private deleteIdeally(workload: SimWorkload): [number, unknown] {
    if (workload.deleteRequestedAt !== undefined) return this.secondDelete(workload)

    if (workload.status === 'deleted') throw new HttpFailure(404, 'NOT_FOUND', 'workload not found')
    workload.deleteRequestedAt = this.clock.now()
    if (this.options.teardownDelayMs <= 0) this.finishDelete(workload)
    return [204, undefined]
  }

  private finishDelete(workload: SimWorkload): void {
    if (workload.status === 'deleted' || workload.tombstone) return
    const offer = this.offers.find((candidate) => candidate.name === workload.resource_name)
    if (offer && workload.deployedAt !== undefined) offer.available++
    workload.deletedAt = this.clock.now()
    setStatus(workload, 'deleted', 'deleted by request', workload.deletedAt)
    workload.endpoint = undefined
    touch(workload, this.clock.now())
    void this.options.onDeleted?.(workload)
  }

  /** Applies the passage of time to a workload (lazy state machine). */
  private advance(workload: SimWorkload): SimWorkload {
    const now = this.clock.now()
    const ideal = this.options.deleteLifecycle === 'ideal'
    if (
      ideal &&
      workload.deleteRequestedAt !== undefined &&
      workload.status !== 'deleted' &&
      now >= workload.deleteRequestedAt + this.options.teardownDelayMs
    ) {
      this.finishDelete(workload)
    }

    const bounce = this.options.tombstoneBounceMs
    if (!ideal && workload.status === 'deleted' && bounce !== null && now >= (workload.deletedAt ?? now) + bounce) {
      setStatus(workload, 'error', 'stopping container: exit code 137', (workload.deletedAt ?? now) + bounce)
      workload.tombstone = true
      // When it flipped, not when somebody next looked.
      workload.updated_at = new Date((workload.deletedAt ?? now) + bounce).toISOString()
    }

    if (
      workload.status === 'provisioning' &&
      workload.deployedAt !== undefined &&
      now >= workload.deployedAt + this.runningDelay(workload)
    ) {
      const scenario = this.provisioningOf(workload)
      if (scenario === 'error') {
        setStatus(workload, 'error', 'simulated boot failure', this.clock.now())
        touch(workload, this.clock.now())
      } else if (scenario === 'normal') {
        this.bringUp(workload)
      }
    }

    return workload
  }

  private timingOf(workload: SimWorkload): DeployTiming | undefined {
    if (workload.woken) return undefined
    return typeof this.options.deployTiming === 'function' ? this.options.deployTiming(workload) : this.options.deployTiming
  }

  private runningDelay(workload: SimWorkload): number {
    return this.timingOf(workload)?.runningMs ?? this.options.bootDelayMs
  }

  /** The address a state shows: once running, or with a deploy timing, once its address delay has passed. */
  private addressOf(workload: SimWorkload): VmEndpoint | undefined {
    if (workload.status === 'running') return workload.endpoint
    const timing = this.timingOf(workload)
    if (workload.status !== 'provisioning' || !timing || workload.deployedAt === undefined) return undefined
    if (this.clock.now() < workload.deployedAt + timing.addressMs) return undefined
    return this.options.onBoot ? workload.boot?.endpoint : {public_ip: '127.0.0.1', ssh_port: 22}
  }

  private provisioningOf(workload: SimWorkload): Provisioning {
    if (workload.woken) return 'normal'
    return typeof this.options.provisioning === 'function' ? this.options.provisioning(workload) : this.options.provisioning
  }

  private startBoot(workload: SimWorkload): void {
    if (!this.options.onBoot || workload.boot) return
    const boot: NonNullable<SimWorkload['boot']> = {}
    workload.boot = boot
    boot.done = this.options.onBoot(workload).then(
      (endpoint) => {
        boot.endpoint = endpoint
        // Deleted while booting: the VM goes too.
        if (workload.status === 'deleted') void this.options.onDeleted?.(workload)
      },
      (error: unknown) => {
        boot.error = String(error)
      },
    )
  }

  /** Running once the VM is up; until then the workload stays provisioning. */
  private bringUp(workload: SimWorkload): void {
    if (!this.options.onBoot) {
      workload.endpoint = {public_ip: '127.0.0.1', ssh_port: 22}
    } else {
      this.startBoot(workload)
      if (workload.boot?.error !== undefined) {
        setStatus(workload, 'error', `simulated VM failed to start: ${workload.boot.error}`, this.clock.now())
        touch(workload, this.clock.now())
        return
      }

      if (!workload.boot?.endpoint) return
      workload.endpoint = this.options.runningEndpoint?.(workload, workload.boot.endpoint) ?? workload.boot.endpoint
    }

    setStatus(workload, 'running', '', this.clock.now())
    workload.runningAt = this.clock.now()
    touch(workload, this.clock.now())
  }

  private stateView(workload: SimWorkload) {
    const running = workload.status === 'running'
    const address = this.addressOf(workload)
    return {
      message: workload.message,
      public_ip: address?.public_ip ?? null,
      ready_replicas: running ? 1 : 0,
      ssh_port: address?.ssh_port ?? null,
      status: this.shownStatus(workload),
      total_replicas: 1,
      uid: workload.uid,
      updated_at: workload.updated_at,
      urls: [],
      workload_type: 'VM',
    }
  }

  /** With `transitional`, a provisioning workload shows `pending`, then `powering_on`, for the first two thirds of its boot. */
  private shownStatus(workload: SimWorkload): string {
    const third = this.options.bootDelayMs / 3
    const elapsed = this.clock.now() - (workload.deployedAt ?? 0)
    const shown =
      !this.options.transitional || workload.status !== 'provisioning'
        ? workload.status
        : elapsed < third
          ? 'pending'
          : elapsed < 2 * third
            ? 'powering_on'
            : 'provisioning'
    this.servedStatuses.push(shown)
    return shown
  }

  private summaryView(workload: SimWorkload) {
    const offer = this.offers.find((candidate) => candidate.name === workload.resource_name)
    return {
      cost_per_hour: workload.cost_per_hour,
      created_at: workload.created_at,
      // The rate while frozen, not the running price: the official fixtures give a running workload 0.01.
      frozen_cost_per_hour: this.options.frozenCostPerHour,
      image: workload.image,
      name: workload.name,
      ...(this.options.summaryProjectId ? {project_id: workload.project_id} : {}),
      resource:
        offer && this.options.resourceDetail
          ? {
              cpu_millicores: offer.vcpus * 1000,
              gpu_count: offer.gpu_count,
              gpu_model: offer.gpu_model,
              memory_mib: offer.memory_mib,
              name: offer.name,
            }
          : null,
      ...(this.options.resourceDetail ? {} : {resource_name: workload.resource_name}),
      revision: '1',
      state: this.stateView(workload),
      type: 'VM',
      uid: workload.uid,
      updated_at: workload.updated_at,
    }
  }

  /** Adds events to a workload's history (e.g. a `running` after its `deleted`), without changing its state. */
  addHistory(uid: string, ...events: Pick<SimEvent, 'created_at' | 'new_status'>[]): void {
    const workload = this.workloads.get(uid)
    if (!workload) return
    workload.events = [...(workload.events ?? []), ...events.map((event) => ({event_type: 'STATUS_CHANGED', message: '', ...event}))]
  }

  /** A page of a workload's history, as the `history` switch plays it. */
  private historyView(workload: SimWorkload, query: URLSearchParams): unknown {
    const variant = this.options.history
    if (variant === 'missing') throw new HttpFailure(404, 'NOT_FOUND', 'no such route')
    const events =
      variant === 'empty' ? [] : [...(workload.events ?? [])].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))
    if (this.options.historyOrder === 'newest-first') events.reverse()
    const items: unknown[] = events.map((event) =>
      variant === 'sparse'
        ? {created_at: event.created_at, new_status: event.new_status}
        : variant === 'hostile'
          ? hostileEvent(event)
          : {
              container_image: null,
              container_name: null,
              created_at: event.created_at,
              display_message: event.message,
              event_type: event.event_type,
              exit_code: event.message.includes('137') ? 137 : null,
              message: event.message,
              new_status: event.new_status,
              old_replica_count: null,
              pod_name: null,
              reason: null,
              replica_count: null,
              resource_name: workload.resource_name,
              workload_type: 'VM',
              workload_uid: workload.uid,
            },
    )
    const pageSize = Math.min(Number(query.get('limit') ?? 50) || 50, this.options.historyPageSize)
    const cursor = query.get('cursor')
    const offset = cursor ? Number(Buffer.from(cursor, 'base64url').toString()) : 0
    if (!Number.isInteger(offset) || offset < 0) throw new HttpFailure(400, 'INVALID_CURSOR', 'invalid cursor')
    const next = offset + pageSize < items.length ? Buffer.from(String(offset + pageSize)).toString('base64url') : null
    return {items: items.slice(offset, offset + pageSize), next_cursor: next ?? (this.options.emptyCursor ? '' : null)}
  }

  private consoleView(workload: SimWorkload, query: URLSearchParams): unknown {
    // A deleted VM has no console any more.
    if (isGone(workload)) throw new HttpFailure(404, 'NOT_FOUND', 'workload not found')
    const type = query.get('type') ?? 'serial'
    if (!['qemu', 'serial'].includes(type)) throw new HttpFailure(400, 'INVALID_QUERY', 'invalid query parameter')
    const tail = query.get('tail')
    if (tail !== null && !/^\d+$/.test(tail)) throw new HttpFailure(400, 'INVALID_QUERY', 'invalid query parameter')
    const lines = type === 'serial' ? this.consoleOf(workload) : ['qemu: terminating on signal 15']
    const shown = tail === null ? lines : Number(tail) === 0 ? [] : lines.slice(-Number(tail))
    const text = shown.map((line) => `${line}\n`).join('')
    return this.options.consoleFormat === 'json' ? {logs: text} : new TextBody(text)
  }

  private workloadView(workload: SimWorkload) {
    return {
      ...this.summaryView(workload),
      project_id: workload.project_id,
      resource_name: workload.resource_name,
      ssh_keys: workload.ssh_keys.map((uid) => {
        const key = this.sshKeys.get(uid)
        return {name: key?.name ?? null, public_key_raw: key?.public_key_raw ?? null, uid}
      }),
    }
  }
}

export {DEFAULT_TOKEN}

function matchPath(path: string, pattern: RegExp | string): boolean {
  return typeof pattern === 'string' ? path.includes(pattern) : pattern.test(path)
}

type ChaosTrouble = '429' | '502-after' | '503' | 'reset' | 'reset-after'

/** A chaos draw as a one-off fault. */
function chaosFault(trouble: ChaosTrouble): Fault {
  const body = JSON.stringify({error: 'upstream trouble'})
  switch (trouble) {
    case '429':
      return {body: JSON.stringify({error: 'slow down', reason: 'RATE_LIMITED'}), path: /./, retryAfter: '0.1', status: 429}
    case '502-after':
      return {path: /./, statusAfterCommit: 502}
    case '503':
      return {body, path: /./, status: 503}
    case 'reset':
      return {path: /./, reset: true}
    case 'reset-after':
      return {dropAfterCommit: true, path: /./}
  }
}

function newUid(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`
}

function isGone(workload: SimWorkload): boolean {
  return workload.status === 'deleted' || workload.tombstone === true
}

/** A status change: the record shows it, and its history keeps it (at `at`, now unless said). */
function setStatus(workload: SimWorkload, status: string, message: string, at: number): void {
  workload.status = status
  workload.message = message
  const created_at = new Date(at).toISOString()
  workload.events = [...(workload.events ?? []), {created_at, event_type: 'STATUS_CHANGED', message, new_status: status}]
  workload.updated_at = created_at
}

/** What a hostile server sends instead of an event: a status of the wrong type, bad dates, escapes, huge text. */
function hostileEvent(event: SimEvent): unknown {
  return {
    created_at: `${event.created_at}\u001b[2J`,
    event_type: 'x'.repeat(100_000),
    message: '\u001b]0;pwned\u0007'.repeat(1000),
    new_status: {nested: event.new_status},
    workload_uid: '../../etc/passwd',
  }
}

function touch(workload: SimWorkload, at: number): void {
  workload.updated_at = new Date(at).toISOString()
}

function orgView(org: OrgSeed, credits: number) {
  return {
    billing_email: '',
    created_at: '2026-07-27T10:00:00Z',
    credits,
    name: org.name,
    org_type: org.org_type,
    overage: 0,
    role: 'OWNER',
    slug: org.slug,
    uid: `org-${org.slug}`,
    updated_at: '2026-07-27T10:00:00Z',
  }
}

function offerView(offer: OfferSeed, variant: InventoryVariant) {
  const a = {gpu_count: offer.gpu_count, gpu_type: offer.gpu_model, memory: offer.memory_mib, storage: offer.disk_mib, vcpu: offer.vcpus}
  const b = {
    cpu_millicores: offer.vcpus * 1000,
    disk_size_mib: offer.disk_mib,
    gpu_count: offer.gpu_count,
    gpu_model: offer.gpu_model,
    memory_mib: offer.memory_mib,
  }
  const spec = variant === 'a' ? a : variant === 'b' ? b : {...a, ...b}
  return {
    available: offer.available,
    cost_per_hour: offer.cost_per_hour,
    description: offer.display_name,
    display_name: offer.display_name,
    gpu: offer.gpu,
    name: offer.name,
    spec,
    type: 'vm',
  }
}

/** Adds unknown fields everywhere, as a growing API would. */
function decorate(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => decorate(item))
  if (value && typeof value === 'object') {
    return {...Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decorate(item)])), x_future_field: {nested: [1, 'two']}}
  }

  return value
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function parseStrict(body: string, allowed: string[], required: string[]): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    throw new HttpFailure(400, 'INVALID_JSON_BODY', 'body is not JSON')
  }

  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new HttpFailure(400, 'INVALID_JSON_BODY', 'body must be an object')
  const fields = parsed as Record<string, unknown>
  const unknown = Object.keys(fields).find((key) => !allowed.includes(key))
  if (unknown) throw new HttpFailure(400, 'INVALID_JSON_BODY', `unknown field ${unknown}`)
  const missing = required.find((key) => fields[key] === undefined)
  if (missing) throw new HttpFailure(400, 'INVALID_JSON_BODY', `missing field ${missing}`)
  return fields
}
