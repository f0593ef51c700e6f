/**
 * What `targon dstack scale` decides, from dstack's runs and fleet and the targon fleet's VMs: which runs wait for
 * capacity (as dstack 0.21.2's run and job models report it), how many VMs to rent for them, and which hosts dstack
 * leaves idle. Pure: the answers and the time are given.
 */
import {type DstackInstance, isBusy} from '../../adapters/dstack/schemas.js'
import type {DstackRun} from '../../adapters/dstack/runs.js'

/**
 * A run just submitted is not yet waiting: dstack looks for a fleet for it within seconds, and may find one outside
 * targon's (a backend, another fleet). One still `submitted` after this long has found none.
 */
export const SUBMITTED_GRACE_MS = 30_000

/** JobTerminationReason values that send a run back to wait for capacity (core/models/runs.py, to RetryEvent). */
const NO_CAPACITY_REASONS = new Set(['failed_to_start_due_to_no_capacity', 'interrupted_by_no_capacity'])

export interface WaitingRun {
  id: string
  name: string | null
  status: string
  /** submitted: its job looks for capacity now; no-capacity: it found none and waits to be retried. */
  why: 'no-capacity' | 'submitted'
}

/** Why a run counts as waiting for capacity, or null when it does not. */
export function waitsForCapacity(run: DstackRun, now: number): WaitingRun['why'] | null {
  const latest = run.latest_job_submission ?? null
  // `retrying` (_get_run_status_message): a job of the run found no capacity, and the run waits to try again.
  const noCapacity = run.status_message === 'retrying' || NO_CAPACITY_REASONS.has(latest?.termination_reason ?? '')
  // A pending run without such a failure waits for something else: its schedule (cron), or a service's scaling.
  if (run.status === 'pending') return noCapacity ? 'no-capacity' : null
  if (run.status !== 'submitted') return null
  if (noCapacity) return 'no-capacity'
  const since = Date.parse(latest?.submitted_at ?? '')
  return Number.isNaN(since) || now - since >= SUBMITTED_GRACE_MS ? 'submitted' : null
}

/** Whether the run may be placed on the dstack fleet: its configuration names no fleet, or names this one. */
export function mayUseFleet(run: DstackRun, dstackFleet: string): boolean {
  const fleets = run.run_spec.configuration.fleets ?? null
  return fleets === null || fleets.length === 0 || fleets.some((fleet) => (typeof fleet === 'string' ? fleet : fleet.name) === dstackFleet)
}

/** The runs of the project that wait for capacity the dstack fleet could give. */
export function waitingRuns(runs: DstackRun[], dstackFleet: string, now: number): WaitingRun[] {
  return runs.flatMap((run) => {
    const why = mayUseFleet(run, dstackFleet) ? waitsForCapacity(run, now) : null
    return why === null ? [] : [{id: run.id, name: run.run_spec.run_name ?? null, status: run.status, why}]
  })
}

/** A VM of the targon fleet as dstack holds it: idle, busy with a job, on its way (not yet idle, or not yet in it). */
export type HostState = 'busy' | 'coming' | 'idle'

/** The VM's state in dstack from the live instances of its fleet that stand for it (none: not in the fleet yet). */
export function hostState(instances: DstackInstance[]): HostState {
  if (instances.some((instance) => isBusy(instance))) return 'busy'
  if (instances.some((instance) => instance.status === 'idle')) return 'idle'
  return 'coming'
}

export type NothingDone = 'at-max' | 'hosts-coming' | 'idle-host' | 'no-waiting-runs'

export interface RentDecision {
  rent: number
  /** Why nothing is rented, when nothing is. */
  reason: NothingDone | null
  why: string | null
}

/**
 * How many VMs to rent: one per waiting run, less the VMs that dstack does not have busy (idle ones, or ones on their
 * way, which dstack places the runs on), never above `max` VMs in the fleet. An idle host means dstack has capacity:
 * nothing is rented while there is one.
 */
export function decideRent(waiting: number, hosts: HostState[], max: number, fleet: string): RentDecision {
  const none = (reason: NothingDone, why: string): RentDecision => ({reason, rent: 0, why})
  if (waiting === 0) return none('no-waiting-runs', 'no dstack run waits for capacity')
  const idle = hosts.filter((state) => state === 'idle').length
  if (idle > 0) return none('idle-host', `${idle} VM(s) of fleet ${fleet} are idle in dstack: dstack places waiting runs there`)
  const free = hosts.filter((state) => state !== 'busy').length
  const wanted = waiting - free
  if (wanted <= 0) return none('hosts-coming', `${free} VM(s) of fleet ${fleet} are on their way into dstack for ${waiting} waiting run(s)`)
  const room = max - hosts.length
  if (room <= 0) return none('at-max', `fleet ${fleet} has ${hosts.length} VM(s), --max ${max}`)
  return {reason: null, rent: Math.min(wanted, room), why: null}
}
