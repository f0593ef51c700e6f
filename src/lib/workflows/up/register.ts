/**
 * The register phase: with --name, adopt the fleet's existing VM of that name (it enters the
 * chain at the stage it is in); otherwise create a workload on the cheapest candidate offer.
 * A create is sent once: after a lost answer the name is looked up before it is retried, and
 * after an interrupt the name is looked up so that clean-up can delete what was committed.
 */
import {randomInt} from 'node:crypto'

import type {Report} from '../../domain/capacity/watch.js'
import type {Offer} from '../../domain/offers/schema.js'
import {workloadName} from '../../domain/fleet/naming.js'
import {TargonError, asTargonError} from '../../core/errors.js'
import type {VmRecord} from '../../adapters/state/local-state.js'
import {
  type CreateWorkloadRequest,
  type SparseWorkload,
  type Workload,
  workloadPrice,
  workloadResourceName,
  workloadStatus,
} from '../../adapters/targon/schemas.js'
import {apiTrouble, isOutcomeUnknown} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import {reconcile} from '../../core/reconcile.js'
import {judge, meantByName} from '../../domain/deletion/lifecycle.js'
import {type Provisioning, checkPrice, deleteClaim, findByName, serverPrice} from './provisioning.js'
import type {Claim, Deployed, Registered, Running, VmTrack} from './stages.js'

export async function register(ctx: Provisioning, track: VmTrack, report: Report): Promise<Deployed | Registered | Running> {
  const {label, fleet} = ctx.request
  if (label === undefined) return createOnCandidates(ctx, track, await offerToRent(ctx, track, report), workloadName(fleet), report)

  const name = workloadName(fleet, label)
  // A deployed VM of that name wins over a never-deployed leftover of an earlier race for it.
  const existing = meantByName(await findByName(ctx, name), workloadStatus, () => false)
  if (existing.length > 1) {
    throw new TargonError(
      'NAME_CONFLICT',
      `${existing.length} live workloads are named ${name}: ${existing.map((workload) => workload.uid).join(', ')}`,
      {
        hint: 'delete the extra ones with targon down <uid>, then run again',
      },
    )
  }

  if (existing.length === 1) return adopt(ctx, track, await checkOwner(ctx, existing[0] as Workload))
  await refuseRenamed(ctx, name)
  if (ctx.request.adoptOnly) {
    throw new TargonError('NOT_FOUND', `no VM named ${name} to take over`, {
      hint: `check the name with targon status, or give a resource or --gpu to create ${name}`,
    })
  }

  const created = await createOnCandidates(ctx, track, await offerToRent(ctx, track, report), name, report)
  return (await yieldToOlderTwin(ctx, track, created)) ?? created
}

/**
 * This directory's record of `name` whose VM is still listed, but no longer under that name (a server renamed it, to
 * a name refused at the boundary, say): it is never replaced by a new VM, since the record is what keeps the renamed
 * one this tool's, deleted by down --all.
 */
async function refuseRenamed(ctx: Provisioning, name: string): Promise<void> {
  const {org} = ctx.request
  const uid = ctx.state.readVm(org, name)?.uid
  if (!uid) return
  const listed = (await ctx.client.listWorkloads(org)).workloads.find((workload) => workload.uid === uid)
  if (!listed || judge(workloadStatus(listed), ctx.state.deleteNotes(org).get(uid)).gone) return
  throw new TargonError('NAME_CONFLICT', `${name} is recorded here as ${uid}, which Targon now lists under another name`, {
    hint: `delete it with targon down ${uid} (it may bill), then run again`,
    resource: {name, uid},
  })
}

/** The cheapest candidate; with --wait, the cheapest with a unit of capacity for this VM, waiting for one if need be. */
async function offerToRent(ctx: Provisioning, track: VmTrack, report: Report): Promise<Offer> {
  if (ctx.capacity) return ctx.capacity.offer(track, report)
  if (ctx.candidates.length === 0)
    throw ctx.whyNoOffer ?? new TargonError('PRICE_CAP_EXCEEDED', 'no offer fits the request', {hint: 'see targon offers'})
  const offer = ctx.units.take()
  if (!offer) {
    const listed = ctx.candidates.map((each) => `${each.resource} ${each.available ?? '?'}`).join(', ')
    throw new TargonError('NO_CAPACITY', `the offers under the cap list fewer units available than this run asks for (${listed})`, {
      hint: 'lower --count, pass --min, wait with --wait 1h, or raise --max-price',
    })
  }

  return offer
}

/**
 * Creates the workload on `offer`. When Targon refuses the create itself for capacity or credits (nothing was
 * created), the next candidate with a unit left is tried; with --wait, the same offer once a newer inventory read
 * lists capacity for it. The refusals, when no offer is left.
 */
export async function createOnCandidates(
  ctx: Provisioning,
  track: VmTrack,
  first: Offer,
  name: string,
  report: Report,
): Promise<Registered> {
  const refusals: TargonError[] = []
  let offer: Offer | undefined = first
  while (offer) {
    try {
      return await create(ctx, track, offer, name)
    } catch (error) {
      if (!(error instanceof TargonError) || ctx.signal.aborted || !(error.code === 'NO_CAPACITY' || error.code === 'INSUFFICIENT_CREDITS'))
        throw error
      refusals.push(error)
      ctx.warn(`${offer.resource} refused to create ${name} (${error.message})`)
      if (ctx.capacity && error.code === 'NO_CAPACITY') {
        if (!(await ctx.capacity.resource(track, offer.resource, name, report))) throw ctx.capacity.ranOut(allRefused(refusals))
      } else {
        offer = ctx.units.take(offer.resource)
      }
    }
  }

  throw allRefused(refusals)
}

/**
 * The create was answered, but the answer failed the checks (a hostile uid, a malformed body): it is never sent
 * again. A valid workload of that name in the listing is the one created; otherwise what the listing shows under the
 * name as an invalid item is deleted by its exact uid (a never-deployed one stays registered: it does not bill, and
 * is named as a leftover), and the VM fails with the answer's error.
 */
async function afterBadAnswer(ctx: Provisioning, name: string, error: TargonError): Promise<Workload> {
  const {org} = ctx.request
  const found = (await findByName(ctx, name, ctx.request.reconcileMs))[0]
  if (found) return found
  ctx.state.removeVm(org, name)
  const {invalid} = await ctx.cleanupClient.listWorkloads(org, {name}).catch(() => ({invalid: []}))
  for (const item of invalid) {
    if (item.uid === null) continue
    const {results} = await deleteClaim(ctx, {name, origin: 'created', status: 'registered', uid: item.uid}, null)
    for (const result of results)
      ctx.warn(`deleted the workload this create made under an unusable uid ${JSON.stringify(item.uid)}: ${result.action}`)
  }

  throw error
}

/**
 * Creates a workload named `name` on `offer`; the track claims it as soon as its uid is known. An unclear answer is
 * reconciled by name before the create is sent again (a blind re-send after a commit would make a duplicate).
 */
export async function create(ctx: Provisioning, track: VmTrack, offer: Offer, name: string): Promise<Registered> {
  if (ctx.orgRefusal) throw ctx.orgRefusal
  const {org} = ctx.request
  const password = randomPassword()
  const now = new Date(ctx.clock.now())
  // The intent is recorded before the request, so that a crash leaves a trace of what may exist.
  saveRecord(ctx, {
    created_at: now.toISOString(),
    name,
    password,
    resource: offer.resource,
    ttl_expires_at: ctx.request.ttlMs === undefined ? null : new Date(now.getTime() + ctx.request.ttlMs).toISOString(),
    uid: null,
  })
  const body = {
    image: ctx.request.image,
    name,
    resource_name: offer.resource,
    ssh_keys: [ctx.request.sshKeyUid, ...ctx.request.guardKeys.map((key) => key.uid).filter((uid) => uid !== ctx.request.sshKeyUid)],
    type: 'VM' as const,
    vm_config: {password},
    ...(ctx.request.owner ? {project_id: ctx.request.owner.projectId} : {}),
  }
  const claimAs = (uid: string): Claim => {
    const claim: Claim = {name, origin: 'created', status: 'registered', uid}
    track.claim = claim
    ctx.state.updateVm(org, name, {uid})
    return claim
  }

  const created = await sendCreate(ctx, name, body, claimAs)
  const uid = created.uid ?? (await findByName(ctx, name, ctx.request.reconcileMs))[0]?.uid
  if (!uid)
    throw new TargonError('BAD_RESPONSE', `Targon API accepted ${name} but returned no uid and does not list it`, {
      hint: 'run targon status to check, then targon down --all',
    })
  const claim = claimAs(uid)
  const price = checkPrice(ctx, claim, await serverPrice(ctx, uid, created), {offer: offer.price_per_hour})
  return {
    claim,
    createdAt: created.created_at ?? now.toISOString(),
    gpu: {count: offer.gpu_count, model: offer.gpu_model},
    kind: 'registered',
    offer,
    price,
    resource: offer.resource,
  }
}

/**
 * With an owner set, --name takes over only a VM of that owner's project: in a shared org the name may be a
 * colleague's VM (or one from before owners). A listing item without project_id is read in full for it.
 */
async function checkOwner(ctx: Provisioning, workload: Workload): Promise<Workload> {
  const {owner} = ctx.request
  if (!owner) return workload
  const projectId =
    workload.project_id === undefined ? (await ctx.client.getWorkload(ctx.request.org, workload.uid)).project_id : workload.project_id
  if (projectId === owner.projectId) return workload
  const name = workload.name ?? workload.uid
  throw new TargonError('NAME_CONFLICT', `${name} exists in the org, but not as a VM of owner ${owner.name}`, {
    hint: 'choose another --name (targon status --any-owner shows whose VMs there are)',
    resource: {name, uid: workload.uid},
  })
}

/**
 * Sends a create until it is answered. An unclear answer (a 5xx without a refusal reason, a reset) may hide a
 * committed create: the listing is watched for the name for the reconcile window, and the create is sent again
 * only if the name never shows, a bounded number of times. Interrupted, it looks for a committed create once more
 * so that clean-up can delete it; an answer that fails the checks is never sent again (afterBadAnswer).
 */
async function sendCreate(
  ctx: Provisioning,
  name: string,
  body: CreateWorkloadRequest,
  claimAs: (uid: string) => Claim,
): Promise<SparseWorkload> {
  const {org} = ctx.request
  let error: Error | undefined
  let outOfTime = false
  try {
    const outcome = await reconcile(
      {
        classify: (failure) => {
          const bad = failure instanceof TargonError && failure.code === 'BAD_RESPONSE'
          return ctx.signal.aborted || bad || !isOutcomeUnknown(failure) ? 'fatal' : 'unclear'
        },
        look: async () => {
          const found = (await findByName(ctx, name))[0]
          return found ? {observed: found} : 'watch'
        },
        lookDelay: BACKOFF.createLook,
        lookTrouble: apiTrouble,
        onUnclear: (failure) => ctx.warn(`the answer to creating ${name} was lost (${failure.message}); checking whether it exists`),
        send: () => ctx.client.createWorkload(org, body),
        watchMs: () => ctx.request.reconcileMs,
      },
      {clock: ctx.clock, deadline: ctx.deadline.at, signal: ctx.signal},
    )
    if (outcome.kind === 'answered') return outcome.value
    if (outcome.kind === 'observed') return outcome.state
    outOfTime = outcome.kind === 'unsettled' && outcome.why === 'deadline'
    error = outcome.error === undefined ? undefined : asError(outcome.error)
  } catch (failure) {
    error = asError(failure)
  }

  if (ctx.signal.aborted || outOfTime || error === undefined) {
    // Interrupted or out of time: the create may still be committed on the server; find it so that clean-up can delete it.
    const committed = (await findByName(ctx, name, ctx.request.reconcileMs / 3, ctx.cleanupClient, null).catch(() => []))[0]
    if (committed) claimAs(committed.uid)
    else ctx.state.removeVm(org, name)
    throw error ?? new TargonError('TIMEOUT', `the create of ${name} did not settle in time`)
  }

  if (error instanceof TargonError && error.code === 'BAD_RESPONSE') return afterBadAnswer(ctx, name, error)
  ctx.state.removeVm(org, name)
  throw error
}

const asError = (error: unknown): Error => (error instanceof Error ? error : asTargonError(error))

/** An existing VM of the fleet with the --name: checked against the request, then taken at the stage it is in. */
function adopt(ctx: Provisioning, track: VmTrack, workload: Workload): Deployed | Registered | Running {
  const resource = workloadResourceName(workload) ?? null
  const name = workload.name ?? workload.uid
  if (ctx.request.resource && resource && resource !== ctx.request.resource) {
    throw new TargonError('NAME_CONFLICT', `${name} already exists on ${resource}, not ${ctx.request.resource}`, {
      hint: 'choose another --name, or omit the resource to take the existing VM',
      resource: {name, uid: workload.uid},
    })
  }

  const status = workloadStatus(workload)
  const claim: Claim = {name, origin: 'adopted', status, uid: workload.uid}
  track.claim = claim
  if (status === 'error' || status === 'suspended') {
    throw new TargonError('API_ERROR', `${name} is in state ${status}${workload.state?.message ? `: ${workload.state.message}` : ''}`, {
      hint: `delete it with targon down ${workload.uid}, then run again`,
      resource: {name, uid: workload.uid},
    })
  }

  const offer = ctx.candidates.find((candidate) => candidate.resource === resource)
  const price = checkPrice(ctx, claim, workloadPrice(workload), {offer: offer?.price_per_hour})
  if (ctx.request.ttlMs !== undefined) applyTtl(ctx, workload, name, ctx.request.ttlMs)
  if (ctx.request.maxCostUsd !== undefined) ctx.state.updateVm(ctx.request.org, name, {max_cost_usd: ctx.request.maxCostUsd})
  const idleLimit = ctx.request.bootstrap?.idle.limit_s
  if (idleLimit !== undefined) ctx.state.updateVm(ctx.request.org, name, {idle_limit_s: idleLimit})
  const priced = {
    claim,
    createdAt: workload.created_at ?? null,
    gpu: {count: offer?.gpu_count ?? workload.resource?.gpu_count ?? null, model: offer?.gpu_model ?? workload.resource?.gpu_model ?? null},
    offer,
    price,
    resource,
  }
  const host = workload.state?.public_ip
  const port = workload.state?.ssh_port
  if (status === 'running' && host && port) return {...priced, endpoint: {host, port}, kind: 'running'}
  return status === 'registered' ? {...priced, kind: 'registered'} : {...priced, kind: 'deployed'}
}

/**
 * --ttl given again for an adopted VM replaces its lifetime, counted from now, and says so. A VM adopted from
 * another machine gets a local record for it (without its password, which only the creating machine knows).
 */
function applyTtl(ctx: Provisioning, workload: Workload, name: string, ttlMs: number): void {
  const {org} = ctx.request
  const expires = new Date(ctx.clock.now() + ttlMs).toISOString()
  const previous = ctx.state.readVm(org, name)
  if (previous) {
    ctx.state.updateVm(org, name, {ttl_expires_at: expires})
  } else {
    saveRecord(ctx, {
      created_at: workload.created_at ?? new Date(ctx.clock.now()).toISOString(),
      name,
      password: '',
      resource: workloadResourceName(workload) ?? null,
      ttl_expires_at: expires,
      uid: workload.uid,
    })
  }

  ctx.warn(`${name} exists already: its TTL now ends at ${expires}${previous?.ttl_expires_at ? ` (was ${previous.ttl_expires_at})` : ''}`)
}

/**
 * Two runs with the same --name (from two machines or config directories) may both have created it. The run
 * whose workload is newer (created_at, then uid) deletes its registered, never deployed workload and adopts
 * the older one, which the other run deploys: both report the same VM, and only one bills.
 */
async function yieldToOlderTwin(ctx: Provisioning, track: VmTrack, ours: Registered): Promise<Deployed | Running | undefined> {
  const twins = await findByName(ctx, ours.claim.name)
  const mine = twins.find((workload) => workload.uid === ours.claim.uid) ?? {created_at: ours.createdAt, uid: ours.claim.uid}
  const older = twins.filter((workload) => workload.uid !== ours.claim.uid && byAge(workload, mine) < 0).sort(byAge)[0]
  if (!older) return undefined
  ctx.warn(`another run created ${ours.claim.name} at the same time: adopting its ${older.uid} and deleting this run's ${ours.claim.uid}`)
  // Never risk paying for two: a duplicate that may still bill stops the run (the failure policy reports it).
  if ((await deleteClaim(ctx, ours.claim, ours.resource)).billing) {
    throw new TargonError('PARTIAL_FAILURE', `could not delete this run's duplicate ${ours.claim.uid}`, {
      hint: `run targon down ${ours.claim.uid}`,
      resource: {name: ours.claim.name, uid: ours.claim.uid},
    })
  }

  const adopted = adopt(ctx, track, older)
  // Still registered: its own run deploys it; deploying it from here too would race that run.
  return adopted.kind === 'registered' ? {...adopted, kind: 'deployed'} : adopted
}

/** Oldest first: by created_at (unknown last), then by uid, so that concurrent runs agree on the order. */
function byAge(a: Pick<Workload, 'created_at' | 'uid'>, b: Pick<Workload, 'created_at' | 'uid'>): number {
  const time = (workload: Pick<Workload, 'created_at'>) => Date.parse(workload.created_at ?? '') || Number.POSITIVE_INFINITY
  return time(a) - time(b) || a.uid.localeCompare(b.uid)
}

function randomPassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
  return Array.from({length: 24}, () => alphabet[randomInt(alphabet.length)]).join('')
}

/** A new local record of a VM of this run: what is known of the VM, with the run's fleet, org, price cap, budget and idle limit. */
function saveRecord(
  ctx: Provisioning,
  vm: Pick<VmRecord, 'created_at' | 'name' | 'password' | 'resource' | 'ttl_expires_at' | 'uid'>,
): void {
  const {bootstrap, fleet, maxCostUsd, maxPrice, org} = ctx.request
  const idleLimit = bootstrap?.idle.limit_s ?? null
  ctx.state.saveVm({
    bootstrapped: false,
    down_job: null,
    fleet,
    host_key: null,
    idle_hold_until: null,
    idle_limit_s: idleLimit,
    on_delete_hook: false,
    hook_timeout_s: null,
    max_cost_usd: maxCostUsd ?? null,
    max_price: maxPrice,
    org,
    ...vm,
  })
}

/** Every offer tried was refused: for capacity or credits alone, that code (exit 10), naming each refusal. */
export function allRefused(refusals: TargonError[]): TargonError {
  const last = refusals.at(-1) as TargonError
  if (refusals.every((refusal) => refusal.code === 'NO_CAPACITY' || refusal.code === 'INSUFFICIENT_CREDITS')) {
    return last.with({message: `every matching offer was refused (${refusals.map((refusal) => refusal.message).join('; ')})`})
  }

  return last
}
