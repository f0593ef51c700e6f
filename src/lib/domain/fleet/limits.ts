/**
 * A VM's limits, as every reader goes by them: its local record (what this directory's up and extend set) and the
 * file the VM carries (adapters/bootstrap/vm-limits.ts), read over SSH by any directory whose key the VM accepts.
 *
 * The VM is untrusted: it may make its limits stricter, never looser than a local record. Where both are known, the
 * stricter of each limit wins (the earlier deadline, the lower budget, the shorter idle limit, a hook if either says
 * so, every down job); a hold-off of the idle deletion (which loosens) is the record's alone when there is one. A VM
 * whose file could not be read has no known limits of its own: with a local record, the record's hold; without one,
 * its limits are unknown, never "no limit" (and so are those of a file alone that sets none).
 */
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import {type VmLimits, type VmLimitsRead, readVmLimits, writeVmLimits} from '../../adapters/bootstrap/vm-limits.js'
import type {VmRecord} from '../../adapters/state/local-state.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {hasGuardKey} from '../../adapters/ssh/project-key.js'
import type {VmSessions} from './vm-sessions.js'
import type {KnownVm} from './fleet-read.js'

export interface Limits {
  ttl_expires_at: string | null
  max_cost_usd: number | null
  idle_limit_seconds: number | null
  idle_hold_until: string | null
  on_delete_hook: boolean
  down_jobs: string[]
}

/** Where a VM's limits came from: its local record, its own file, both (the stricter of each), or nowhere (unknown). */
export type LimitsSource = 'both' | 'local' | 'vm'

export interface KnownLimits extends Limits {
  /** null: neither a local record nor a readable file on the VM, so its limits are unknown. */
  source: LimitsSource | null
}

const NONE: Limits = {
  down_jobs: [],
  idle_hold_until: null,
  idle_limit_seconds: null,
  max_cost_usd: null,
  on_delete_hook: false,
  ttl_expires_at: null,
}

/** The idle limit the guard applies to a VM: its own (up --idle: its record, or the file it carries), else the configured one; null: none. */
export function idleLimitOf(vm: Pick<KnownVm, 'record' | 'onVm'>, configuredS: number | null): number | null {
  return limitsOf(vm).idle_limit_seconds ?? configuredS
}

/** The limits of a local record. */
export function recordLimits(record: VmRecord): Limits {
  return {
    down_jobs: record.down_job === null ? [] : [record.down_job],
    idle_hold_until: record.idle_hold_until,
    idle_limit_seconds: record.idle_limit_s,
    max_cost_usd: record.max_cost_usd,
    on_delete_hook: record.on_delete_hook,
    ttl_expires_at: record.ttl_expires_at,
  }
}

/** The limits a VM goes by (see the header). */
export function limitsOf(vm: Pick<KnownVm, 'record' | 'onVm'>): KnownLimits {
  const local = vm.record ? recordLimits(vm.record) : undefined
  const carried = vm.onVm?.state === 'read' ? vm.onVm.limits : undefined
  if (local && carried) return {...stricter(local, carried), source: 'both'}
  if (local) return {...local, source: 'local'}
  // A file alone that sets no limit at all cannot be told from one the VM loosened: unknown, never "no limit".
  if (carried && setsAnyLimit(carried)) return {...fromFile(carried), source: 'vm'}
  return {...NONE, source: null}
}

function setsAnyLimit(limits: VmLimits): boolean {
  return limits.ttl_expires_at !== null || limits.max_cost_usd !== null || limits.idle_limit_seconds !== null || limits.down_jobs.length > 0
}

function fromFile(limits: VmLimits): Limits {
  return {
    down_jobs: limits.down_jobs,
    idle_hold_until: limits.idle_hold_until,
    idle_limit_seconds: limits.idle_limit_seconds,
    max_cost_usd: limits.max_cost_usd,
    on_delete_hook: limits.on_delete_hook,
    ttl_expires_at: limits.ttl_expires_at,
  }
}

function stricter(local: Limits, carried: VmLimits): Limits {
  const earlier = [local.ttl_expires_at, carried.ttl_expires_at]
    .filter((at): at is string => at !== null)
    .sort((a, b) => Date.parse(a) - Date.parse(b))[0]
  return {
    down_jobs: [...new Set([...local.down_jobs, ...carried.down_jobs])],
    idle_hold_until: local.idle_hold_until,
    idle_limit_seconds: lower(local.idle_limit_seconds, carried.idle_limit_seconds),
    max_cost_usd: lower(local.max_cost_usd, carried.max_cost_usd),
    on_delete_hook: local.on_delete_hook || carried.on_delete_hook,
    ttl_expires_at: earlier ?? null,
  }
}

/** The lower of two limits, where null is none. */
function lower(a: number | null, b: number | null): number | null {
  if (a === null) return b
  return b === null ? a : Math.min(a, b)
}

/** The file a VM is to carry for a local record. */
export function limitsFile(record: VmRecord, owner: string | null, now: number): VmLimits {
  return {...recordLimits(record), owner, version: 1, written_at: new Date(now).toISOString()}
}

/**
 * Writes the limits of a local record on its VM over an open session; null when written, else why not (the caller
 * says what that means: the VM then goes by its earlier file, or by none).
 */
export async function carryLimits(session: SshSession, file: VmLimits): Promise<string | null> {
  try {
    await writeVmLimits(session, file)
    return null
  } catch (error) {
    return asTargonError(error).message
  }
}

/** Limits read at once: each a short connection, most of it waiting on the network. */
const READS_IN_FLIGHT = 16

/** Whether this directory can read the limits a VM carries: its own bootstrapped VMs, and every VM of this tool from a team guard's. */
export function limitsReadable(vm: KnownVm, configDir: string): boolean {
  return !vm.gone && vm.owned && vm.status === 'running' && (vm.record?.bootstrapped === true || hasGuardKey(configDir))
}

/** Reads into vm.onVm the limits a VM carries, over the run's connection to it, where this directory can. */
export async function readLimitsOf(vm: KnownVm, sessions: VmSessions, options: {configDir: string; signal?: AbortSignal}): Promise<void> {
  if (!limitsReadable(vm, options.configDir) || options.signal?.aborted) return
  try {
    vm.onVm = await readVmLimits(await sessions.session(vm, 0), options.signal)
  } catch (error) {
    vm.onVm = {problem: asTargonError(error).message, state: 'unreachable'}
  }
}

/**
 * Reads the limits of each VM this directory can reach (see limitsReadable), `READS_IN_FLIGHT` at a time, into
 * vm.onVm; `then` does what else the run reads of the VM over the same connection (the sweep: its idle probe), before
 * the connection is released. One connection attempt each: a VM that does not answer is unreachable, and the run goes on.
 */
export async function readLimitsOnVms(
  vms: KnownVm[],
  sessions: VmSessions,
  options: {configDir: string; signal?: AbortSignal; then?: (vm: KnownVm) => Promise<void>},
): Promise<void> {
  await mapBounded(
    vms.filter((vm) => limitsReadable(vm, options.configDir)),
    READS_IN_FLIGHT,
    async (vm) => {
      try {
        await readLimitsOf(vm, sessions, options)
        await options.then?.(vm)
      } finally {
        sessions.release(vm)
      }
    },
  )
}

/** Why a VM's limits are unknown here (limitsOf gave no source). */
export function whyLimitsUnknown(vm: Pick<KnownVm, 'onVm' | 'status'>): string {
  if (vm.onVm?.state === 'read') return 'its limits file sets no limit, which cannot be told from one the VM loosened'
  if (vm.onVm) return vm.onVm.problem
  return vm.status === 'running' ? 'no key of this directory reaches it' : `not running (${vm.status}), so its limits were not read`
}

/** What to say of a VM's limits that could not be read from it; null when they were, or were not asked for. */
export function limitsProblem(read: VmLimitsRead | undefined): string | null {
  return read === undefined || read.state === 'read' ? null : read.problem
}
