/**
 * The provisioning flow of `targon up` for one VM, phase by phase, and the failure policy
 * that deletes what a failed or interrupted run created. UI-agnostic: the command renders
 * progress from the phase callbacks.
 */
import {randomInt} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {setTimeout as sleep} from 'node:timers/promises'

import type {TargonClient} from '../targon/client.js'
import {type SparseWorkload, type Workload, workloadPrice, workloadResourceName, workloadStatus} from '../targon/schemas.js'
import {TargonError} from '../shell/errors.js'
import {workloadName} from '../fleet/naming.js'
import {withinCap} from '../shell/input.js'
import {type BootstrapParams, type Marker, type StepEvent, runInstall, runShim} from '../bootstrap/runner.js'
import {readPin, writePin} from '../ssh/pins.js'
import {type HostKey, SshSession} from '../ssh/session.js'
import {judge} from '../deletion/lifecycle.js'
import type {DeleteNote, LocalState} from '../state/local-state.js'
import {deleteWorkloads} from '../deletion/delete-workloads.js'
import {isOutcomeUnknown, pollDelay, pollUntil} from '../targon/wait.js'
import type {DeleteResult, Leftover, Offer, OnFailure, PhaseName, PhaseResult, VmResult} from '../contract.js'




/** Phase bounds (cli-contract §3.7). */
export const PHASE_TIMEOUT_MS = {deploy: 60_000, install: 30 * 60_000, register: 60_000, 'shim-start': 5 * 60_000, 'wait-running': 20 * 60_000} as const
/** Of the install bound, how long sshd may take to answer after running. */
const SSH_WAIT_MS = 10 * 60_000
const RECONCILE_MS = 30_000

export interface UpRequest {
  org: string
  fleet: string
  maxPrice: number
  image: string
  /** Exact resource asked for; otherwise any candidate offer. */
  resource?: string
  /** The user's --name (only with --count 1). */
  label?: string
  ttlMs?: number
  onFailure: OnFailure
  /** Absolute deadline of the whole run (epoch ms). */
  deadline: number
  sshKeyUid: string
  identityFile: string
  configDir: string
  /** null with --no-bootstrap. */
  bootstrap: {params: Omit<BootstrapParams, 'password'>; shim: boolean} | null
}

export interface ProvisionDeps {
  client: TargonClient
  /** The same API, not tied to Ctrl-C nor to --timeout: clean-up must run after an interrupt or a time-out. */
  cleanupClient: TargonClient
  state: LocalState
  /** Aborts on Ctrl-C and other signals, and when the run's --timeout runs out. */
  signal: AbortSignal
  warn: (message: string) => void
}

/** What one VM of a run knows about itself; failure handling reads it. */
export interface VmRun {
  index: number
  name?: string
  uid?: string
  offer?: Offer
  /** Created by this run (as opposed to adopted). */
  created: boolean
  adopted: boolean
  status?: string
  workload?: SparseWorkload
  price?: number
  publicIp?: string
  sshPort?: number
  phases: PhaseResult[]
  /** Set when the adopted workload is already past a phase. */
  skip: Set<PhaseName>
  ssh?: SshSession
  hostKey?: HostKey
  marker?: Marker
  shimVersion?: string
}

export function newVmRun(index: number): VmRun {
  return {adopted: false, created: false, index, phases: [], skip: new Set()}
}


export class Provisioner {
  /** Registered workloads left behind by refused deploys (see teardown.ts); `down` tries them again. */
  readonly leftovers: Leftover[] = []

  constructor(
    private readonly deps: ProvisionDeps,
    private readonly request: UpRequest,
    private readonly candidates: Offer[],
    /** Why there are no candidates, raised only once something must be created. */
    private readonly whyNoOffer?: TargonError,
  ) {}

  /** Times a phase and records it; a skipped phase costs nothing. */
  async phase(vm: VmRun, name: PhaseName, work: () => Promise<void>): Promise<'done' | 'skipped'> {
    const started = Date.now()
    if (vm.skip.has(name)) {
      vm.phases.push({duration_ms: 0, name, status: 'skipped'})
      return 'skipped'
    }

    try {
      await work()
    } catch (error) {
      vm.phases.push({duration_ms: Date.now() - started, name, status: 'failed'})
      throw error
    }

    // Adopting an existing VM can show, during the phase, that its work was already done.
    const status = vm.skip.has(name) ? 'skipped' : 'done'
    vm.phases.push({duration_ms: Date.now() - started, name, status})
    return status
  }

  /** Register: adopt the named VM of the fleet if it exists, else create a workload on the cheapest candidate. */
  async register(vm: VmRun): Promise<void> {
    const {client} = this.deps
    if (this.request.label !== undefined) {
      const name = workloadName(this.request.fleet, this.request.label)
      vm.name = name
      const existing = await this.findByName(name)
      if (existing.length > 1) {
        throw new TargonError('NAME_CONFLICT', `${existing.length} live workloads are named ${name}: ${existing.map((workload) => workload.uid).join(', ')}`, {
          hint: 'delete the extra ones with targon down <uid>, then run again',
        })
      }

      if (existing.length === 1) {
        this.adopt(vm, existing[0] as Workload)
        return
      }
    }

    const offer = this.candidates[0]
    if (!offer) throw this.whyNoOffer ?? new TargonError('PRICE_CAP_EXCEEDED', 'no offer fits the request', {hint: 'see targon offers'})
    await this.create(vm, offer, client)
    if (this.request.label !== undefined) await this.yieldToOlderTwin(vm)
  }

  /**
   * Two runs with the same --name (from two machines or config directories) may both have created it. The run
   * whose workload is newer (created_at, then uid) deletes its registered, never deployed workload and adopts
   * the older one, which the other run deploys: both report the same VM, and only one bills.
   */
  private async yieldToOlderTwin(vm: VmRun): Promise<void> {
    const ours = vm.uid as string
    const twins = await this.findByName(vm.name as string)
    const mine = twins.find((workload) => workload.uid === ours) ?? {created_at: vm.workload?.created_at, uid: ours}
    const older = twins.filter((workload) => workload.uid !== ours && byAge(workload, mine) < 0).sort(byAge)[0]
    if (!older) return
    this.deps.warn(`another run created ${vm.name} at the same time: adopting its ${older.uid} and deleting this run's ${ours}`)
    if ((await this.deleteVm(vm)).billing) this.deps.warn(`could not delete this run's duplicate ${ours}: delete it with targon down ${ours}`)
    vm.created = false
    this.adopt(vm, older)
    // Still registered: its own run deploys it; deploying it from here too would race that run.
    vm.skip.add('deploy')
  }

  private adopt(vm: VmRun, workload: Workload): void {
    const resource = workloadResourceName(workload)
    if (this.request.resource && resource && resource !== this.request.resource) {
      throw new TargonError('NAME_CONFLICT', `${workload.name ?? workload.uid} already exists on ${resource}, not ${this.request.resource}`, {
        hint: 'choose another --name, or omit the resource to take the existing VM',
        resource: {name: workload.name ?? undefined, uid: workload.uid},
      })
    }

    vm.adopted = true
    vm.uid = workload.uid
    vm.workload = workload
    vm.offer = this.candidates.find((offer) => offer.resource === resource)
    const status = workloadStatus(workload)
    vm.status = status
    if (status === 'error' || status === 'suspended') {
      throw new TargonError('API_ERROR', `${workload.name ?? workload.uid} is in state ${status}${workload.state?.message ? `: ${workload.state.message}` : ''}`, {
        hint: `delete it with targon down ${workload.uid}, then run again`,
        resource: {name: workload.name ?? undefined, uid: workload.uid},
      })
    }

    this.checkPrice(vm, workloadPrice(workload))
    if (this.request.ttlMs !== undefined) this.applyTtl(vm, workload, this.request.ttlMs)
    vm.skip.add('register')
    if (status !== 'registered') vm.skip.add('deploy')
    if (status === 'running' && workload.state?.public_ip && workload.state.ssh_port) {
      vm.publicIp = workload.state.public_ip
      vm.sshPort = workload.state.ssh_port
      vm.skip.add('wait-running')
    }
  }

  /**
   * --ttl given again for an adopted VM replaces its lifetime, counted from now, and says so. A VM adopted from
   * another machine gets a local record for it (without its password, which only the creating machine knows).
   */
  private applyTtl(vm: VmRun, workload: Workload, ttlMs: number): void {
    const {org} = this.request
    const name = workload.name ?? vm.name ?? workload.uid
    const expires = new Date(Date.now() + ttlMs).toISOString()
    const previous = this.deps.state.readVm(org, name)
    if (previous) {
      this.deps.state.updateVm(org, name, {ttl_expires_at: expires})
    } else {
      this.deps.state.saveVm({
        bootstrapped: false,
        created_at: workload.created_at ?? new Date().toISOString(),
        fleet: this.request.fleet,
        host_key: null,
        max_price: this.request.maxPrice,
        name,
        org,
        password: '',
        resource: workloadResourceName(workload) ?? null,
        ttl_expires_at: expires,
        uid: workload.uid,
      })
    }

    this.deps.warn(`${name} exists already: its TTL now ends at ${expires}${previous?.ttl_expires_at ? ` (was ${previous.ttl_expires_at})` : ''}`)
  }

  private async create(vm: VmRun, offer: Offer, client: TargonClient): Promise<void> {
    const name = vm.name && this.request.label !== undefined ? vm.name : workloadName(this.request.fleet)
    vm.name = name
    vm.offer = offer
    const password = randomPassword()
    const now = new Date()
    // The intent is recorded before the request, so that a crash leaves a trace of what may exist.
    this.deps.state.saveVm({
      bootstrapped: false,
      created_at: now.toISOString(),
      fleet: this.request.fleet,
      host_key: null,
      max_price: this.request.maxPrice,
      name,
      org: this.request.org,
      password,
      resource: offer.resource,
      ttl_expires_at: this.request.ttlMs === undefined ? null : new Date(now.getTime() + this.request.ttlMs).toISOString(),
      uid: null,
    })
    const body = {image: this.request.image, name, resource_name: offer.resource, ssh_keys: [this.request.sshKeyUid], type: 'VM' as const, vm_config: {password}}

    let created: SparseWorkload | undefined
    try {
      created = await client.createWorkload(this.request.org, body)
    } catch (error) {
      if (this.deps.signal.aborted) {
        // Interrupted or out of time: the create may still be committed on the server; find it so that clean-up can delete it.
        const committed = await this.findCommitted(name)
        if (committed) {
          vm.uid = committed.uid
          vm.created = true
          this.deps.state.updateVm(this.request.org, name, {uid: committed.uid})
        }

        throw error
      }

      if (!isOutcomeUnknown(error)) {
        this.deps.state.removeVm(this.request.org, name)
        throw error
      }

      // The create may have been committed even though its answer was lost: look before retrying once.
      this.deps.warn(`the answer to creating ${name} was lost (${(error as Error).message}); checking whether it exists`)
      created = (await this.findByName(name, RECONCILE_MS))[0]
      created ??= await client.createWorkload(this.request.org, body)
    }

    let uid = created.uid
    if (!uid) {
      uid = (await this.findByName(name, RECONCILE_MS))[0]?.uid
      if (!uid) throw new TargonError('BAD_RESPONSE', `Targon API accepted ${name} but returned no uid and does not list it`, {hint: 'run targon status to check, then targon down --all'})
    }

    vm.uid = uid
    vm.created = true
    vm.workload = created
    vm.status = 'registered'
    this.deps.state.updateVm(this.request.org, name, {uid})
    this.checkPrice(vm, await this.serverPrice(vm, created))
  }

  /** Deploy; a refused offer is deleted and the next candidate is registered and tried. */
  async deploy(vm: VmRun): Promise<void> {
    const {client} = this.deps
    const refusals: TargonError[] = []
    for (let attempt = this.candidates.indexOf(vm.offer as Offer); ; attempt++) {
      const outcome = await this.deployOnce(vm)
      if (outcome === undefined) return
      refusals.push(outcome)
      // A named, adopted workload is the user's; other offers are not tried in its place.
      const next = vm.adopted ? undefined : this.candidates[attempt + 1]
      if (!next) throw allRefused(refusals)
      this.deps.warn(`${vm.offer?.resource ?? 'offer'} refused (${outcome.message}); trying ${next.resource}`)
      await this.discard(vm)
      await this.create(vm, next, client)
    }
  }

  /** One deploy attempt: undefined on success, the refusal otherwise. */
  private async deployOnce(vm: VmRun): Promise<TargonError | undefined> {
    const {client} = this.deps
    const uid = vm.uid as string
    let answer: SparseWorkload
    try {
      answer = await client.deployWorkload(this.request.org, uid)
    } catch (error) {
      // A 429 that outlasted its retries says "not processed, slow down": never a refusal of this offer.
      if (!(error instanceof TargonError) || this.deps.signal.aborted || error.code === 'AUTH' || error.httpStatus === 429) throw error
      if (!isOutcomeUnknown(error)) return classifyRefusal(error)
      // The answer was lost or a 5xx: the state tells whether the deploy happened.
      const status = workloadStatus({state: await client.getWorkloadState(this.request.org, uid)})
      if (status === 'registered' || status === 'error') return classifyRefusal(error)
      answer = {}
    }

    vm.status = 'provisioning'
    this.checkPrice(vm, await this.serverPrice(vm, answer))
    return undefined
  }

  /**
   * Wait until running with an address, polling fast at first and then backing off. Only a terminal state or the
   * deadline ends the wait: rate limits and other transient API errors just delay the next poll.
   */
  async waitRunning(vm: VmRun): Promise<void> {
    const {client, signal} = this.deps
    const uid = vm.uid as string
    const started = Date.now()
    const deadline = Math.min(this.request.deadline, started + PHASE_TIMEOUT_MS['wait-running'])
    const running = await pollUntil(
      async () => {
        let state
        try {
          state = await client.getWorkloadState(this.request.org, uid)
        } catch (error) {
          if (error instanceof TargonError && error.code === 'NOT_FOUND') throw goneError(vm)
          throw error
        }

        const status = workloadStatus({state})
        vm.status = status
        if (status === 'running' && state.public_ip && state.ssh_port) return {host: state.public_ip, port: state.ssh_port}
        if (status === 'deleted') throw goneError(vm)
        if (status === 'error' || status === 'suspended') {
          throw new TargonError('API_ERROR', `${vm.name} went to state ${status}${state.message ? `: ${state.message}` : ''}`, {
            hint: 'try another offer or run again later',
            resource: {name: vm.name, uid},
          })
        }

        return undefined
      },
      {deadline, delayMs: pollDelay, signal},
    )
    if (!running) {
      throw new TargonError('TIMEOUT', `${vm.name} was not running after ${Math.round((Date.now() - started) / 1000)} s in wait-running (last status: ${vm.status})`, {
        hint: 'raise --timeout, or try another offer',
        resource: {name: vm.name, uid},
      })
    }

    vm.publicIp = running.host
    vm.sshPort = running.port
  }

  /** Install: wait for SSH (pinning the host key on first contact), then run the bootstrap. */
  async install(vm: VmRun, onEvent: (event: StepEvent) => void): Promise<void> {
    const bootstrap = this.request.bootstrap
    if (!bootstrap) return
    const uid = vm.uid as string
    const host = vm.publicIp as string
    const port = vm.sshPort as number
    const pinned = readPin(this.request.configDir, uid)
    vm.ssh = await SshSession.open({
      deadline: Math.min(this.request.deadline, Date.now() + SSH_WAIT_MS),
      host,
      onRetry: (reason) => this.deps.warn(`waiting for SSH on ${vm.name} (${reason})`),
      pinned,
      port,
      privateKey: readFileSync(this.request.identityFile),
      signal: this.deps.signal,
      username: 'ubuntu',
    })
    vm.hostKey = vm.ssh.hostKey
    if (!pinned) {
      writePin(this.request.configDir, uid, host, port, vm.hostKey.key)
      this.deps.state.updateVm(this.request.org, vm.name as string, {host_key: {alias: `targon-${uid}`, fingerprint: vm.hostKey.fingerprint, host, key: vm.hostKey.key, port}})
    }

    const password = vm.name ? this.deps.state.readVm(this.request.org, vm.name)?.password : undefined
    vm.marker = await runInstall(vm.ssh, {...bootstrap.params, password}, onEvent, this.deps.signal)
    if (!bootstrap.shim) this.deps.state.updateVm(this.request.org, vm.name as string, {bootstrapped: true})
  }

  /** Shim-start: dstack-shim as its systemd unit, then healthy through an SSH tunnel. */
  async shimStart(vm: VmRun, onEvent: (event: StepEvent) => void): Promise<void> {
    const bootstrap = this.request.bootstrap
    if (!bootstrap?.shim || !vm.ssh) return
    vm.shimVersion = (await runShim(vm.ssh, bootstrap.params, onEvent, this.deps.signal)).version
    this.deps.state.updateVm(this.request.org, vm.name as string, {bootstrapped: true})
  }

  closeSsh(vm: VmRun): void {
    vm.ssh?.close()
    vm.ssh = undefined
  }

  /** Applies --on-failure to a failed VM; returns what was deleted and what survived. */
  async rollback(vm: VmRun): Promise<{attempted: boolean; results: DeleteResult[]}> {
    this.closeSsh(vm)
    const deleteIt = vm.uid !== undefined && (this.request.onFailure === 'delete' || (this.request.onFailure === 'auto' && vm.created))
    if (!deleteIt) {
      if (!vm.uid && vm.name && !vm.adopted) this.deps.state.removeVm(this.request.org, vm.name)
      return {attempted: false, results: []}
    }

    return {attempted: true, results: (await this.deleteVm(vm)).results}
  }

  /**
   * Deletes a VM's workload (confirmed, within the clean-up budget) and, once it no longer bills, its local
   * record. A registered workload that Targon refuses to delete is kept as a leftover.
   */
  private async deleteVm(vm: VmRun): Promise<{billing: boolean; results: DeleteResult[]}> {
    const target = {name: vm.name ?? null, status: vm.status, uid: vm.uid as string}
    const results = await deleteWorkloads(this.deps.cleanupClient, this.request.org, this.deps.state, [target], {onProgress: this.deps.warn})
    const billing = results.some((result) => result.billing !== false)
    for (const result of results.filter((each) => each.action === 'left-registered')) {
      this.leftovers.push({name: result.name, resource: vm.offer?.resource ?? null, uid: result.uid})
      this.deps.warn(`${result.name ?? result.uid} (${result.uid}) stays registered: Targon refuses to delete a workload that was never deployed; it does not run. targon down retries it; targon down --wake-registered deploys it briefly to delete it`)
    }

    if (!billing && vm.name) this.deps.state.removeVm(this.request.org, vm.name)
    return {billing, results}
  }

  toResult(vm: VmRun, identityFile: string): VmResult {
    const record = vm.name ? this.deps.state.readVm(this.request.org, vm.name) : undefined
    const marker = vm.marker
    return {
      adopted: vm.adopted,
      bootstrap: marker
        ? {
            docker_version: marker.docker?.version ?? null,
            driver_version: marker.driver_version ?? null,
            gpus: {count: marker.gpus?.count ?? null, name: marker.gpus?.name ?? null},
            nvidia_ctk_version: marker.nvidia_ctk_version ?? null,
            script_version: marker.script_version ?? null,
          }
        : null,
      dstack: vm.shimVersion ? {healthy: true, shim_version: vm.shimVersion} : null,
      host_key_fingerprint: vm.hostKey?.fingerprint ?? record?.host_key?.fingerprint ?? null,
      created_at: vm.workload?.created_at ?? record?.created_at ?? null,
      fleet: this.request.fleet,
      gpu_count: vm.offer?.gpu_count ?? vm.workload?.resource?.gpu_count ?? null,
      gpu_model: vm.offer?.gpu_model ?? vm.workload?.resource?.gpu_model ?? null,
      identity_file: identityFile,
      max_price: this.request.maxPrice,
      name: vm.name ?? '',
      phases: vm.phases,
      price_per_hour: vm.price ?? vm.offer?.price_per_hour ?? 0,
      public_ip: vm.publicIp ?? null,
      resource: vm.offer?.resource ?? (vm.workload ? (workloadResourceName(vm.workload) ?? '') : ''),
      ssh_port: vm.sshPort ?? null,
      status: vm.status ?? 'unknown',
      ttl_expires_at: record?.ttl_expires_at ?? null,
      uid: vm.uid ?? '',
      user: 'ubuntu',
    }
  }

  /** Deletes the current workload of a VM that is about to be replaced by the next offer. */
  private async discard(vm: VmRun): Promise<void> {
    if ((await this.deleteVm(vm)).billing) {
      // Never risk paying for two: stop here and let the failure policy report the survivor.
      throw new TargonError('PARTIAL_FAILURE', `could not delete the refused workload ${vm.uid}`, {hint: `run targon down ${vm.uid}`, resource: {name: vm.name, uid: vm.uid}})
    }

    vm.uid = undefined
    vm.created = false
    vm.workload = undefined
  }

  /**
   * Live workloads with exactly this name (the server's filter is re-checked here), watching the
   * listing for up to waitMs. The clean-up client and no signal serve after an interrupt.
   */
  private async findByName(name: string, waitMs = 0, client = this.deps.client, signal: AbortSignal | undefined = this.deps.signal): Promise<Workload[]> {
    const deadline = Date.now() + waitMs
    for (;;) {
      const notes = this.deps.state.deleteNotes(this.request.org)
      const found = (await client.listWorkloads(this.request.org, {name})).filter((workload) => workload.name === name && !isDeadWeight(workloadStatus(workload), notes.get(workload.uid)))
      if (found.length > 0 || Date.now() + 2000 > deadline) return found
      await sleep(2000, undefined, {signal})
    }
  }

  /** After an interrupted create: whether it was committed all the same (errors mean "not known"). */
  private async findCommitted(name: string): Promise<Workload | undefined> {
    return (await this.findByName(name, RECONCILE_MS / 3, this.deps.cleanupClient, undefined).catch(() => []))[0]
  }

  /** The price the server reports, reading the workload when the answer was sparse. */
  private async serverPrice(vm: VmRun, answer: SparseWorkload): Promise<number | undefined> {
    const inAnswer = workloadPrice(answer)
    if (inAnswer !== undefined) return inAnswer
    const workload = await this.deps.client.getWorkload(this.request.org, vm.uid as string)
    vm.workload = workload
    return workloadPrice(workload)
  }

  private checkPrice(vm: VmRun, price: number | undefined): void {
    if (price === undefined) {
      if (!vm.price) this.deps.warn(`the API did not report a price for ${vm.name}; assuming the offer price`)
      vm.price ??= vm.offer?.price_per_hour
      return
    }

    vm.price = price
    if (!withinCap(price, this.request.maxPrice)) {
      throw new TargonError('PRICE_CAP_EXCEEDED', `${vm.name} costs ${price.toFixed(2)} USD/h, above the cap ${this.request.maxPrice.toFixed(2)} USD/h`, {
        hint: 'raise --max-price or pick a cheaper resource',
        resource: {name: vm.name, uid: vm.uid},
      })
    }
  }
}

function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
  return Array.from({length: 24}, () => alphabet[randomInt(alphabet.length)]).join('')
}

/** Deploy refusals: credits (402, CREDIT), capacity (409, CAPACITY/AVAILAB/INVENTORY), or a plain API error. */
export function classifyRefusal(error: TargonError): TargonError {
  if (error.httpStatus === 429) return error
  const text = `${error.reason ?? ''} ${error.message}`.toUpperCase()
  const code = error.httpStatus === 402 || text.includes('CREDIT') ? 'INSUFFICIENT_CREDITS' : error.httpStatus === 409 || /CAPACITY|AVAILAB|INVENTORY/.test(text) ? 'NO_CAPACITY' : undefined
  if (!code) return error
  return new TargonError(code, error.message, {
    hint: code === 'INSUFFICIENT_CREDITS' ? 'add credits to the org, or pick a cheaper offer' : 'try again later, or widen --gpu / raise --max-price',
    httpStatus: error.httpStatus,
    reason: error.reason,
    requestId: error.requestId,
  })
}

function allRefused(refusals: TargonError[]): TargonError {
  const last = refusals.at(-1) as TargonError
  if (refusals.every((refusal) => refusal.code === 'NO_CAPACITY' || refusal.code === 'INSUFFICIENT_CREDITS')) {
    return new TargonError(last.code, `every matching offer was refused (${refusals.map((refusal) => refusal.message).join('; ')})`, {
      hint: last.hint,
      httpStatus: last.httpStatus,
      reason: last.reason,
      requestId: last.requestId,
    })
  }

  return last
}

/** Oldest first: by created_at (unknown last), then by uid, so that concurrent runs agree on the order. */
function byAge(a: Pick<Workload, 'created_at' | 'uid'>, b: Pick<Workload, 'created_at' | 'uid'>): number {
  const time = (workload: Pick<Workload, 'created_at'>) => Date.parse(workload.created_at ?? '') || Number.POSITIVE_INFINITY
  return time(a) - time(b) || a.uid.localeCompare(b.uid)
}

/** Not a VM to adopt: a tombstone, or a registered leftover that Targon refused to delete here. */
function isDeadWeight(status: string, note: DeleteNote | undefined): boolean {
  return judge(status, note).gone || (status === 'registered' && note?.outcome === 'refused')
}

function goneError(vm: VmRun): TargonError {
  return new TargonError('API_ERROR', `${vm.name} was deleted while waiting for it to run`, {hint: 'someone or something deleted it; run targon up again', resource: {name: vm.name, uid: vm.uid}})
}
