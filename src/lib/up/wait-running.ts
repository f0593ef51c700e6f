/**
 * The wait-running phase: poll the state until the VM runs with an address, fast at first and
 * then backing off. Only a terminal state or the deadline ends the wait: rate limits and other
 * transient API errors just delay the next poll.
 */
import {withConsoleTail} from '../logs/logs.js'
import {TargonError} from '../shell/errors.js'
import {workloadStatus} from '../targon/schemas.js'
import {pollDelay, pollUntil} from '../targon/wait.js'
import type {RunContext} from './run-context.js'
import type {Claim, Deployed, Running} from './stages.js'

/** How long a VM may take to run (within the run's --timeout): GPU VMs can take many minutes to boot. */
const WAIT_RUNNING_MS = 20 * 60_000

export async function waitRunning(ctx: RunContext, deployed: Deployed): Promise<Running> {
  try {
    return await untilRunning(ctx, deployed)
  } catch (error) {
    // A VM that errors or never runs: its console says why (read without the run's signal, which may have expired).
    throw await withConsoleTail(ctx.cleanupClient, ctx.request.org, deployed.claim, error)
  }
}

async function untilRunning(ctx: RunContext, deployed: Deployed): Promise<Running> {
  const {claim} = deployed
  const started = Date.now()
  let last = claim.status
  const endpoint = await pollUntil(
    async () => {
      let state
      try {
        state = await ctx.client.getWorkloadState(ctx.request.org, claim.uid)
      } catch (error) {
        if (error instanceof TargonError && error.code === 'NOT_FOUND') throw goneError(claim)
        throw error
      }

      last = workloadStatus({state})
      claim.status = last
      if (last === 'running' && state.public_ip && state.ssh_port) return {host: state.public_ip, port: state.ssh_port}
      if (last === 'deleted') throw goneError(claim)
      if (last === 'error' || last === 'suspended') {
        throw new TargonError('API_ERROR', `${claim.name} went to state ${last}${state.message ? `: ${state.message}` : ''}`, {
          hint: 'try another offer or run again later',
          resource: {name: claim.name, uid: claim.uid},
        })
      }

      return undefined
    },
    {deadline: Math.min(ctx.deadline.at, started + WAIT_RUNNING_MS), delayMs: pollDelay, signal: ctx.signal},
  )
  if (!endpoint) {
    throw new TargonError(
      'TIMEOUT',
      `${claim.name} was not running after ${Math.round((Date.now() - started) / 1000)} s in wait-running (last status: ${last})`,
      {
        hint: 'raise --timeout, or try another offer',
        resource: {name: claim.name, uid: claim.uid},
      },
    )
  }

  return {...deployed, endpoint, kind: 'running'}
}

function goneError(claim: Claim): TargonError {
  return new TargonError('API_ERROR', `${claim.name} was deleted while waiting for it to run`, {
    hint: 'someone or something deleted it; run targon up again',
    resource: {name: claim.name, uid: claim.uid},
  })
}
