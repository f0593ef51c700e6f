/**
 * A VM leaves dstack before it is deleted: down, sweep and jobs wait --down call this from the one deletion path
 * (runDown), for the VMs about to go. Only a host of a targon-* dstack fleet is touched, with delete_instances. A host
 * running a dstack job is not removed behind dstack's back: the deletion waits for the job within the hook budget,
 * or (--force, or the budget spent, or an interrupt) goes ahead and says so. Nothing here stops or changes a deletion:
 * a dstack that cannot be reached or answers badly is a warning, and the next sync repairs the fleet.
 */
import {refusalOf} from '../../adapters/dstack/client.js'
import {SETTINGS} from '../../adapters/settings/table.js'
import {isBusy} from '../../adapters/dstack/schemas.js'
import {BACKOFF} from '../../core/backoff.js'
import type {Clock} from '../../core/clock.js'
import {asTargonError} from '../../core/errors.js'
import {formatDuration} from '../../core/input.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {DstackLeaveOutcome} from '../../domain/deletion/schema.js'
import {type HeldHost, heldHosts} from './hosts.js'
import {type DstackHandle, openDstack} from './open.js'
import type {RunContext} from '../run-context.js'

export interface DstackLeave {
  handle: DstackHandle
  /** down --force: a host with a dstack job is deleted without waiting for it. */
  force: boolean
}

const REPAIR = 'the next targon dstack sync removes it'

/**
 * Takes these VMs out of their targon-* dstack fleets; waits at most `budgetMs` for hosts with a dstack job. Says per
 * uid what became of it in dstack. Never throws.
 */
export async function leaveDstack(
  run: {clock: Clock; warn: (message: string) => void; signal: AbortSignal},
  leave: DstackLeave,
  vms: KnownVm[],
  budgetMs: number,
): Promise<Map<string, DstackLeaveOutcome>> {
  const outcomes = new Map<string, DstackLeaveOutcome>()
  const settle = (held: HeldHost[], outcome: DstackLeaveOutcome) => {
    for (const each of held) outcomes.set(each.vm.uid, outcome)
  }
  if (vms.length === 0) return outcomes
  const {client, settings} = leave.handle
  const names = vms.map((vm) => vm.name ?? vm.uid).join(', ')
  try {
    const deadline = run.clock.now() + budgetMs
    let held = heldHosts(await client.listFleets(), vms, settings.hostPattern)
    let busy = held.filter((each) => isBusy(each.instance))
    if (busy.length > 0 && leave.force) {
      run.warn(`${who(busy)} runs a dstack job: deleting it all the same (--force); dstack's job fails, and ${REPAIR}`)
      settle(busy, 'busy-forced')
    }

    while (busy.length > 0 && !leave.force && !run.signal.aborted && run.clock.now() < deadline) {
      await run.clock.sleep(Math.min(BACKOFF.dstackJobLook(), Math.max(0, deadline - run.clock.now())), run.signal).catch(() => {})
      held = heldHosts(await client.listFleets(), vms, settings.hostPattern)
      busy = held.filter((each) => isBusy(each.instance))
    }

    if (busy.length > 0 && !leave.force) {
      run.warn(
        `${who(busy)} still runs a dstack job after ${formatDuration(budgetMs)}: deleting it all the same; dstack's job fails, and ${REPAIR}`,
      )
      settle(busy, 'busy-after-wait')
    }

    const idle = held.filter((each) => !isBusy(each.instance))
    for (const fleet of new Set(idle.map((each) => each.fleet))) {
      const leaving = idle.filter((each) => each.fleet === fleet)
      try {
        await deleteInstances(
          run,
          leave,
          fleet,
          leaving.map((each) => each.instance.instance_num),
        )
        settle(leaving, 'removed')
      } catch (error) {
        run.warn(
          `dstack could not take ${who(leaving)} out of ${fleet} (${asTargonError(error).message}): deleting all the same; ${REPAIR}`,
        )
        settle(leaving, failureOf(error))
      }
    }
  } catch (error) {
    run.warn(`dstack could not take ${names} out of its fleet (${asTargonError(error).message}): deleting all the same; ${REPAIR}`)
    for (const vm of vms) if (!outcomes.has(vm.uid)) outcomes.set(vm.uid, failureOf(error))
  }

  for (const vm of vms) if (!outcomes.has(vm.uid)) outcomes.set(vm.uid, 'not-in-fleet')
  return outcomes
}

/** A dstack that did not answer, or one that answered with a refusal or an error. */
function failureOf(error: unknown): DstackLeaveOutcome {
  const {code} = asTargonError(error)
  return code === 'NETWORK_ERROR' || code === 'TIMEOUT' ? 'unreachable' : 'failed'
}

/** delete_instances, sent again (a few times) while dstack processes the fleet. */
async function deleteInstances(run: {clock: Clock; signal: AbortSignal}, leave: DstackLeave, fleet: string, nums: number[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await leave.handle.client.deleteInstances(fleet, nums)
      return
    } catch (error) {
      if (refusalOf(error) !== 'busy' || attempt >= 2 || run.signal.aborted) throw error
      await run.clock.sleep(BACKOFF.dstackJobLook(), run.signal)
    }
  }
}

function who(held: HeldHost[]): string {
  return [...new Set(held.map((each) => each.vm.name ?? each.vm.uid))].join(', ')
}

/**
 * How long one request to dstack may hold the deletion up (TARGON_DSTACK_LEAVE_TIMEOUT). A value out of range is a
 * warning and the default holds: neither a reason not to delete nor one to leave dstack out of the deletion.
 */
async function leaveRequestMs(run: Pick<RunContext, 'settings' | 'warn'>): Promise<number> {
  try {
    return await run.settings.get('dstack-leave-timeout')
  } catch (error) {
    const fallback = SETTINGS['dstack-leave-timeout'].default
    run.warn(`${asTargonError(error).message}: dstack may hold this deletion up for ${fallback / 1000} s per request instead`)
    return fallback
  }
}

/**
 * The dstack server the deletions of a run leave, when the profile names one; undefined otherwise. A configuration
 * that cannot be read is a warning: it never stops a deletion. The caller closes its client.
 */
export async function openLeave(
  run: Pick<RunContext, 'clock' | 'settings' | 'warn'>,
  force: boolean,
  trace?: (line: string) => void,
): Promise<DstackLeave | undefined> {
  try {
    const handle = await openDstack(run, {maxRequestMs: () => leaveRequestMs(run), trace})
    return handle === null ? undefined : {force, handle}
  } catch (error) {
    run.warn(`dstack is not used by this deletion (${asTargonError(error).message}); ${REPAIR.replace('it', 'what it still holds')}`)
    return undefined
  }
}
