/**
 * down --idle and the sweep's idle limit: which chosen VMs are idle past their limit, read on each VM's idle clock.
 */
import {countOf} from '../../core/output.js'
import {type KnownVm, billingUncertain} from '../../domain/fleet/fleet-read.js'
import {type AlsoRead, idlePastLimit, probeUsages} from '../../domain/idle/idle.js'
import type {Usage} from '../../domain/idle/schema.js'
import type {DeletionRun} from '../run-context.js'
import type {DownResult} from './schema.js'
import type {DownSelection} from './selection.js'
import {limitsOf} from '../../domain/fleet/limits.js'
import type {VmSessions} from '../../domain/fleet/vm-sessions.js'

/**
 * Reads the idle clock of each chosen VM (as many at once as deletions); those idle past their limit (their own, else
 * --idle-limit) are to be deleted, the others kept with why. An unreadable clock is never a reason to delete.
 */
export async function keepUnlessIdle(
  run: DeletionRun,
  chosen: KnownVm[],
  options: {
    configDir: string
    /** Probes at once (as many as deletions). */
    parallel: number
    selection: Pick<DownSelection, 'idle_limit_seconds'>
    /** More to read over each probe's connection (the sweep: the VM's jobs). */
    alsoRead?: AlsoRead
    /** The run's connections to the VMs. */
    sessions: VmSessions
    /** What earlier reads of the run already probed (the sweep probes a VM right after reading its limits). */
    probed?: Map<string, Usage>
  },
): Promise<{chosen: KnownVm[]; kept: DownResult['kept']}> {
  const live = chosen.filter((vm) => !vm.gone)
  const probed = options.probed ?? new Map<string, Usage>()
  const fresh = await probeUsages(
    live.filter((vm) => !probed.has(vm.uid)),
    options.sessions,
    {
      alsoRead: options.alsoRead,
      clock: run.clock,
      configDir: options.configDir,
      limitS: options.selection.idle_limit_seconds,
      parallel: options.parallel,
      signal: run.signal,
    },
  )
  const usages = new Map([...probed, ...fresh])
  const usage = (vm: KnownVm) => usages.get(vm.uid) as Usage
  // targon extend held off its idle deletion: idle or not, it stays until then.
  const heldUntil = (vm: KnownVm) => {
    const until = Date.parse(limitsOf(vm).idle_hold_until ?? '')
    return until > run.clock.now() ? new Date(until).toISOString() : null
  }
  const idle = live.filter((vm) => idlePastLimit(usage(vm)) && heldUntil(vm) === null)
  const kept = live
    .filter((vm) => !idle.includes(vm))
    .map((vm) => ({
      idle_seconds: usage(vm).idle_seconds,
      name: vm.name,
      reason: `${usage(vm).idle_reason}${heldUntil(vm) === null ? '' : `; idle deletion held off until ${heldUntil(vm)} (targon extend)`}`,
      state: usage(vm).state,
      uid: vm.uid,
    }))
  // VMs not running have no clock to read: one line for them all, by status; each is in data.kept.
  const stopped = live.filter((vm) => vm.status !== 'running')
  const unreadable = kept.filter((vm) => vm.state === 'unreadable' && !stopped.some((each) => each.uid === vm.uid))
  if (unreadable.length > 0)
    run.warn(
      `kept ${countOf(unreadable.length, 'VM')} whose idle clock could not be read (${unreadable.map((vm) => `${vm.name ?? vm.uid}: ${vm.reason}`).join('; ')}); their --ttl and --max-cost still apply`,
    )
  if (stopped.length > 0) {
    const byStatus = new Map<string, number>()
    for (const vm of stopped) byStatus.set(vm.status, (byStatus.get(vm.status) ?? 0) + 1)
    const uncertain = stopped.filter(billingUncertain).length
    run.warn(
      `kept ${countOf(stopped.length, 'VM')} not running (${[...byStatus].map(([status, count]) => `${count} ${status}`).join(', ')}), which have no idle clock${uncertain > 0 ? `, ${uncertain} of unknown billing` : ''}: --show-deleted lists them; targon status says which bill`,
    )
  }
  return {chosen: idle, kept}
}
