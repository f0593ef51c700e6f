/**
 * The deploy phase: deploy the registered workload; when Targon refuses the offer (capacity,
 * credits, or another clear refusal), delete that workload and register and deploy the next
 * candidate. With --wait, a workload refused for capacity is kept instead and deployed again
 * once its offer lists capacity. A deploy whose answer is lost is never repeated blindly: the
 * state says whether it happened. A 429 is "not processed", never a refusal.
 */
import type {Report} from '../capacity/watch.js'
import {workloadName} from '../fleet/naming.js'
import {TargonError} from '../shell/errors.js'
import {type SparseWorkload, workloadStatus} from '../targon/schemas.js'
import {isOutcomeUnknown} from '../targon/wait.js'
import {create} from './register.js'
import {type RunContext, checkPrice, deleteClaim, serverPrice} from './run-context.js'
import type {Deployed, Registered, VmTrack} from './stages.js'

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
    current = await create(ctx, track, next, ctx.request.label === undefined ? workloadName(ctx.request.fleet) : current.claim.name)
  }
}

/** One deploy attempt: the deployed stage, or the refusal. */
async function deployOnce(ctx: RunContext, registered: Registered): Promise<Deployed | TargonError> {
  const {claim} = registered
  let answer: SparseWorkload
  try {
    answer = await ctx.client.deployWorkload(ctx.request.org, claim.uid)
  } catch (error) {
    // A 429 that outlasted its retries says "not processed, slow down": never a refusal of this offer.
    if (!(error instanceof TargonError) || ctx.signal.aborted || error.code === 'AUTH' || error.httpStatus === 429) throw error
    if (!isOutcomeUnknown(error)) return classifyRefusal(error)
    // The answer was lost or a 5xx: the state tells whether the deploy happened.
    const status = workloadStatus({state: await ctx.client.getWorkloadState(ctx.request.org, claim.uid)})
    if (status === 'registered' || status === 'error') return classifyRefusal(error)
    answer = {}
  }

  claim.status = 'provisioning'
  return {
    ...registered,
    kind: 'deployed',
    price: checkPrice(ctx, claim, await serverPrice(ctx, claim.uid, answer), {previous: registered.price}),
  }
}

/** Deploy refusals: credits (402, CREDIT), capacity (409, CAPACITY/AVAILAB/INVENTORY), or a plain API error. */
export function classifyRefusal(error: TargonError): TargonError {
  if (error.httpStatus === 429) return error
  const text = `${error.reason ?? ''} ${error.message}`.toUpperCase()
  const code =
    error.httpStatus === 402 || text.includes('CREDIT')
      ? 'INSUFFICIENT_CREDITS'
      : error.httpStatus === 409 || /CAPACITY|AVAILAB|INVENTORY/.test(text)
        ? 'NO_CAPACITY'
        : undefined
  if (!code) return error
  return new TargonError(code, error.message, {
    hint:
      code === 'INSUFFICIENT_CREDITS'
        ? 'add credits to the org, or pick a cheaper offer'
        : 'try again later, or widen --gpu / raise --max-price',
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
