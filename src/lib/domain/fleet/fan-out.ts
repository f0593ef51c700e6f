/**
 * Work on many VMs at once, as `exec` and `cp` do (which VMs, the workflows choose from a listing they record): at
 * most `parallel` at a time, and one rule for the end: an interrupt wins (with the results so far), any failed VM makes
 * the whole run fail with per-VM results.
 */
import {mapBounded} from '../../core/concurrency.js'
import {type ErrorCode, TargonError, asTargonError, usageError} from '../../core/errors.js'
import type {Clock} from '../../core/clock.js'
import {type PinnedKey, type SshTarget, openPinned} from '../../adapters/ssh/connect-info.js'
import {checkedPrivateKeyPath, hasGuardKey} from '../../adapters/ssh/project-key.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {type RunEvents, vmRef} from '../../adapters/events/run-events.js'
import type {KnownVm} from './fleet-read.js'

/**
 * How a run reaches its VMs over SSH: its config directory (the project key and the host-key pins), and how long a VM
 * whose sshd does not answer (yet) is tried again, the ssh-connect-timeout setting.
 */
export interface VmReach {
  configDir: string
  connectMs: number
}

/** The VMs named by a --vms flag ("a, b,c"); empty when it was not given. */
export function parseVmList(flag: string | undefined): string[] {
  const names = (flag ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  if (flag !== undefined && names.length === 0) throw usageError('--vms names no VM', 'e.g. --vms worker1,worker2')
  return names
}

/** One SSH session to a VM of the run, with its pinned host key (and whether it was pinned now); none once the run is interrupted. */
export async function openVm(
  vm: KnownVm,
  options: VmReach & {
    signal?: AbortSignal
    info?: (message: string) => void
    clock?: Clock
    /** A shorter bound than connectMs for this connection (0: one attempt). */
    deadlineMs?: number
  },
): Promise<{session: SshSession; hostKey: PinnedKey}> {
  if (options.signal?.aborted) throw asTargonError(options.signal.reason)
  let pinnedNow = false
  const session = await openPinned(targetOf(vm, options.configDir), (message) => options.info?.(message), {
    clock: options.clock,
    deadlineMs: options.deadlineMs ?? options.connectMs,
    onPinned: () => (pinnedNow = true),
    signal: options.signal,
  })
  return {hostKey: {fingerprint: session.hostKey.fingerprint, new: pinnedNow}, session}
}

export interface FanOutEnd {
  /** The error code when some VM failed; its exit code is the run's. */
  code: ErrorCode
  message: string
  hint: string
  signal?: AbortSignal
}

/** Runs `work` on every VM, at most `parallel` at once; results in the order of `vms`. */
export function fanOut<R>(vms: KnownVm[], parallel: number, work: (vm: KnownVm) => Promise<R>): Promise<R[]> {
  return mapBounded(vms, parallel, work)
}

/** How one VM's work ended, for its event: whether it did, a line for a person, and, when not, the error. */
export interface VmOutcome {
  ok: boolean
  detail: string | null
  durationMs: number
  error: {code: ErrorCode; message: string}
}

/** Runs one VM's work announced on `events` as `type`: started, then done or failed as `outcome` reads the result. */
export async function announced<R>(
  events: RunEvents | undefined,
  type: 'exec' | 'transfer',
  vm: KnownVm,
  work: () => Promise<R>,
  outcome: (result: R) => VmOutcome,
): Promise<R> {
  const ref = vmRef(vm.uid, vm.name)
  events?.emit({status: 'started', type, vm: ref})
  const result = await work()
  const {detail, durationMs, error, ok} = outcome(result)
  events?.emit({
    detail,
    duration_ms: durationMs,
    error: ok ? null : {...error, hint: null},
    status: ok ? 'done' : 'failed',
    type,
    vm: ref,
  })
  return result
}

/** The run's result, or the error that carries it: the interrupt, else `end` when any VM failed. */
export function resultOrFailure<T extends object>(result: T, failedCount: number, end: FanOutEnd): T {
  if (end.signal?.aborted) {
    const interrupted = asTargonError(end.signal.reason)
    interrupted.data = result as Record<string, unknown>
    throw interrupted
  }

  if (failedCount > 0) throw new TargonError(end.code, end.message, {data: result as Record<string, unknown>, hint: end.hint})
  return result
}

/** Where to reach a known VM over SSH; a VM that is not running, or has no address yet, is refused with what to do. */
export function targetOf(vm: KnownVm, configDir: string): SshTarget {
  const host = vm.workload.state?.public_ip
  const port = vm.workload.state?.ssh_port
  if (vm.status !== 'running' || !host || !port) {
    const which = vm.name ?? vm.uid
    // A crashed or suspended VM will not come to run by itself, and it may bill meanwhile.
    const stuck = vm.status === 'error' || vm.status === 'suspended'
    throw new TargonError('API_ERROR', `${which} is ${vm.status}${stuck ? '' : ', with no SSH address yet'}`, {
      hint: stuck
        ? `it will not run again by itself and may still bill: delete it with targon down ${which}`
        : 'wait for it to run (targon status), or run targon up --name <vm>',
    })
  }

  const record = vm.record?.uid === vm.uid ? {key: vm.record.host_key?.key, name: vm.record.name, org: vm.record.org} : undefined
  // A VM made here takes the project key; any other only the team guard's key (up adds it to every VM), where there is one.
  const role = record === undefined && hasGuardKey(configDir) ? 'guard' : 'project'
  return {configDir, host, identityFile: checkedPrivateKeyPath(configDir, role), keyRole: role, name: vm.name, port, record, uid: vm.uid}
}
