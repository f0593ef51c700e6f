/**
 * The deploy phase: deploy the registered workload; when Targon refuses the offer (capacity,
 * credits, or another clear refusal), delete that workload and register and deploy the next
 * candidate. With --wait, a workload refused for capacity is kept instead and deployed again
 * once its offer lists capacity. A deploy whose answer is lost is never repeated blindly: the
 * state says whether it happened. A 429 is "not processed", never a refusal.
 */
import type {Report} from '../capacity/watch.js'
import {workloadName} from '../fleet/naming.js'
import {TargonError} from '../core/errors.js'
import {type SparseWorkload, workloadPrice, workloadStatus} from '../targon/schemas.js'
import {isOutcomeUnknown, pollUntil} from '../targon/wait.js'
import {allRefused, createOnCandidates} from './register.js'
import {type RunContext, checkPrice, deleteClaim, serverPrice} from './run-context.js'
import type {Deployed, Registered, VmTrack} from './stages.js'
import {recordStart} from '../ledger/ledger.js'
import type {VmFacts} from '../contract.js'

export async function deploy(ctx: RunContext, track: VmTrack, registered: Registered, report: Report): Promise<Deployed> {
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

/** How many times one deploy is sent while its answers stay unclear and the workload stays registered. */
const DEPLOY_SENDS = 4

/**
 * One deploy: the deployed stage, or the refusal. An unclear answer (a 5xx without a refusal reason, 503 TEMPORARY, a
 * reset, a 409 state conflict) is reconciled: the state says whether the deploy happened, and while the workload is
 * still registered it is sent again, with a back-off, at most DEPLOY_SENDS times in all.
 */
async function deployOnce(ctx: RunContext, registered: Registered): Promise<Deployed | TargonError> {
  const {claim} = registered
  const {org} = ctx.request
  let sent = 0
  let unclear: TargonError | undefined
  // Errors that end the run are returned, not thrown: the poll would take a 429 for trouble to wait out.
  const outcome = await pollUntil<{answer: SparseWorkload} | {fatal: unknown} | {refusal: TargonError}>(
    async () => {
      if (unclear) {
        const status = workloadStatus({state: await ctx.client.getWorkloadState(org, claim.uid)})
        if (status === 'error') return {refusal: unclear}
        if (status !== 'registered') return {answer: {}}
        if (sent >= DEPLOY_SENDS) return {refusal: unclear}
        ctx.warn(`the deploy of ${claim.name} got no clear answer (${unclear.message}); it is still registered, so it is sent again`)
      }

      sent++
      try {
        return {answer: await ctx.client.deployWorkload(org, claim.uid)}
      } catch (error) {
        // A 429 that outlasted its retries says "not processed, slow down": never a refusal of this offer.
        if (!(error instanceof TargonError) || ctx.signal.aborted || error.code === 'AUTH' || error.code === 'QUOTA_EXCEEDED')
          return {fatal: error}
        if (error.httpStatus === 429) return {fatal: error}
        if (!isOutcomeUnknown(error) && error.httpStatus !== 409) return {refusal: error}
        unclear = error
        return undefined
      }
    },
    {deadline: ctx.deadline.at, delayMs: (poll) => Math.min(8000, 1000 * 2 ** poll), signal: ctx.signal},
  )
  if (!outcome) return unclear ?? new TargonError('TIMEOUT', `the deploy of ${claim.name} did not settle in time`)
  if ('fatal' in outcome) throw outcome.fatal
  if ('refusal' in outcome) return outcome.refusal

  claim.status = 'provisioning'
  // Billing starts here: the ledger hears of it before anything else can fail.
  const facts = deployedFacts(ctx, registered, outcome.answer)
  const unrecorded = recordStart(ctx.state.dir, org, {facts, source: 'deploy', uid: claim.uid})
  if (unrecorded) ctx.warn(unrecorded)
  return {
    ...registered,
    kind: 'deployed',
    price: checkPrice(ctx, claim, await serverPrice(ctx, claim.uid, outcome.answer), {previous: registered.price}),
  }
}

/** The VM as the ledger keeps it; the price the deploy's answer gives, else the one known at registration. */
function deployedFacts(ctx: RunContext, registered: Registered, answer: SparseWorkload): VmFacts {
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
