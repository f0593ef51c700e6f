/**
 * The deploy phase: deploy the registered workload; when Targon refuses the offer (capacity,
 * credits, or another clear refusal), delete that workload and register and deploy the next
 * candidate. With --wait, a workload refused for capacity is kept instead and deployed again
 * once its offer lists capacity. A deploy whose answer is lost is never repeated blindly: the
 * state says whether it happened. A 429 is "not processed", never a refusal.
 */
import type {Report} from '../../domain/capacity/watch.js'
import {workloadName} from '../../domain/fleet/naming.js'
import {TargonError} from '../../core/errors.js'
import {type SparseWorkload, workloadPrice, workloadStatus} from '../../adapters/targon/schemas.js'
import {apiTrouble, isOutcomeUnknown} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import {type Verdict, reconcile} from '../../core/reconcile.js'
import {allRefused, createOnCandidates} from './register.js'
import {type Provisioning, checkPrice, deleteClaim, serverPrice} from './provisioning.js'
import type {Deployed, Registered, VmTrack} from './stages.js'
import {recordStart} from '../../domain/ledger/ledger.js'
import type {VmFacts} from '../../domain/ledger/schema.js'

export async function deploy(ctx: Provisioning, track: VmTrack, registered: Registered, report: Report): Promise<Deployed> {
  const refusals: TargonError[] = []
  let current = registered
  for (;;) {
    const outcome = await deployOnce(ctx, current).finally(() => ctx.capacity?.release(track))
    if (!(outcome instanceof TargonError)) return outcome
    refusals.push(outcome)
    // Another workload in its place would leave this one registered (Targon refuses to delete it): wait for its offer.
    if (ctx.capacity && outcome.code === 'NO_CAPACITY' && current.resource !== null) {
      ctx.warn(`${current.resource} refused ${current.claim.name} for capacity (${outcome.message}); waiting to deploy it again`)
      if (await ctx.capacity.resource(track, current.resource, current.claim.name, report)) continue
      throw ctx.capacity.ranOut(allRefused(refusals))
    }

    // A named, adopted workload is the user's; other offers are not tried in its place.
    const next = current.claim.origin === 'adopted' ? undefined : ctx.units.take(current.resource)
    if (!next) throw allRefused(refusals)
    ctx.warn(`${current.resource ?? 'offer'} refused (${outcome.message}); trying ${next.resource}`)
    // Never risk paying for two: a refused workload that may still bill stops the run (the failure policy reports it).
    if ((await deleteClaim(ctx, current.claim, current.resource)).billing) {
      throw new TargonError('PARTIAL_FAILURE', `could not delete the refused workload ${current.claim.uid}`, {
        hint: `run targon down ${current.claim.uid}`,
        resource: {name: current.claim.name, uid: current.claim.uid},
      })
    }

    track.claim = undefined
    current = await createOnCandidates(
      ctx,
      track,
      next,
      ctx.request.label === undefined ? workloadName(ctx.request.fleet) : current.claim.name,
      report,
    )
  }
}

/**
 * One deploy: the deployed stage, or the refusal. An unclear answer (a 5xx without a refusal reason, 503 TEMPORARY, a
 * reset, a 409 state conflict) is reconciled: the state says whether the deploy happened, and while the workload is
 * still registered it is sent again, with a back-off, a bounded number of times.
 */
async function deployOnce(ctx: Provisioning, registered: Registered): Promise<Deployed | TargonError> {
  const {claim} = registered
  const {org} = ctx.request
  let unclear: TargonError | undefined
  claim.deployUnsettled = true
  const outcome = await reconcile(
    {
      classify: (error) => deployVerdict(ctx, error),
      look: async () => {
        const status = workloadStatus({state: await ctx.client.getWorkloadState(org, claim.uid)})
        return status === 'registered' ? 'watch' : {observed: status}
      },
      lookDelay: BACKOFF.deployLook,
      lookTrouble: apiTrouble,
      onResend: () =>
        ctx.warn(`the deploy of ${claim.name} got no clear answer (${unclear?.message}); it is still registered, so it is sent again`),
      onUnclear: (error) => {
        unclear = error as TargonError
      },
      send: () => ctx.client.deployWorkload(org, claim.uid),
      watchMs: (_unclear, sends) => BACKOFF.deployLook(sends - 1),
    },
    {clock: ctx.clock, deadline: ctx.deadline.at, signal: ctx.signal},
  ).catch((error: unknown) => {
    // A clear refusal (the key, a quota, a 429) left nothing in flight; an interrupt or a lost answer may have.
    if (!ctx.signal.aborted && !isOutcomeUnknown(error)) claim.deployUnsettled = false
    throw error
  })
  claim.deployUnsettled = outcome.kind === 'unsettled'
  if (outcome.kind === 'refused') return outcome.error as TargonError
  // Out of sends or time, or a deploy that left the workload in error: the unclear answer says what is known.
  if (outcome.kind === 'unsettled' || (outcome.kind === 'observed' && outcome.state === 'error'))
    return unclear ?? new TargonError('TIMEOUT', `the deploy of ${claim.name} did not settle in time`)
  const answer: SparseWorkload = outcome.kind === 'answered' ? outcome.value : {}

  claim.status = 'provisioning'
  // Billing starts here: the ledger hears of it before anything else can fail.
  const facts = deployedFacts(ctx, registered, answer)
  const unrecorded = recordStart(ctx.state.dir, org, {facts, source: 'deploy', uid: claim.uid}, ctx.clock.now())
  if (unrecorded) ctx.warn(unrecorded)
  return {
    ...registered,
    kind: 'deployed',
    price: checkPrice(ctx, claim, await serverPrice(ctx, claim.uid, answer), {previous: registered.price}),
  }
}

/**
 * A deploy that threw. A 429 that outlasted its retries says "not processed, slow down": never a refusal of this
 * offer, and it ends the run, as do an interrupt, the key and a quota. A 409 (a state conflict) is unclear.
 */
function deployVerdict(ctx: Provisioning, error: unknown): Verdict {
  if (!(error instanceof TargonError) || ctx.signal.aborted || error.code === 'AUTH' || error.code === 'QUOTA_EXCEEDED') return 'fatal'
  if (error.httpStatus === 429) return 'fatal'
  return isOutcomeUnknown(error) || error.httpStatus === 409 ? 'unclear' : 'refused'
}

/** The VM as the ledger keeps it; the price the deploy's answer gives, else the one known at registration. */
function deployedFacts(ctx: Provisioning, registered: Registered, answer: SparseWorkload): VmFacts {
  return {
    fleet: ctx.request.fleet,
    gpu_count: registered.gpu.count,
    gpu_model: registered.gpu.model,
    name: registered.claim.name,
    owner: ctx.request.owner?.name ?? null,
    price_per_hour: workloadPrice(answer) ?? registered.price,
    resource: registered.resource,
  }
}
