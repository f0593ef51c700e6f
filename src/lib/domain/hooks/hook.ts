/**
 * Pre-delete hooks: a command the user stores on a VM (up --on-delete) and that down and sweep run there, as ubuntu
 * over the VM's pinned SSH connection, before they delete it, so that work is saved first.
 *
 * The command lives in /etc/targon-fleet/on-delete.conf, 0600 root:root: it may carry a token, and nothing on the VM
 * needs it but the hook's command below, which reads it through sudo (ubuntu has passwordless sudo; the idle sampler's user has
 * no business with it, unlike idle.conf). It is passed to bash on stdin, never on a command line that ps shows.
 *
 * Its timeout is the user's: up keeps it in the VM's local record as well, and the copy on the VM can only shorten it.
 *
 * Nothing here stops a deletion: a hook that fails, times out or cannot run is reported and the VM is deleted.
 */
import type {DeleteReason} from '../deletion/schema.js'
import type {HookOutcome} from '../../adapters/events/schema.js'
import {mapBounded} from '../../core/concurrency.js'
import {TargonError, asTargonError} from '../../core/errors.js'
import {type Clock, stopwatch} from '../../core/clock.js'
import {type VmReach, openVm} from '../fleet/fan-out.js'
import type {KnownVm} from '../fleet/fleet-read.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {API_IDENTIFIER_PATTERN, WORKLOAD_NAME_PATTERN} from '../../adapters/targon/schemas.js'

export const HOOK_CONF = '/etc/targon-fleet/on-delete.conf'
/** up --hook-timeout's default. */
export const DEFAULT_HOOK_TIMEOUT_MS = 10 * 60_000
/** The longest command up --on-delete takes. */
export const MAX_HOOK_BYTES = 4096
/** What the result keeps of a hook's output: its last lines, at most this many and this many bytes. */
export const TAIL_LINES = 20
export const TAIL_BYTES = 4096
/** What the VM sends of the output (it keeps only its end: tail -c), and what is read of it at most. */
const REMOTE_TAIL_BYTES = 16 * 1024
const MAX_READ_BYTES = 2 * REMOTE_TAIL_BYTES
/** What the stored setting may be when read back (the command, JSON-escaped, and the timeout). */
const MAX_CONF_BYTES = 8 * MAX_HOOK_BYTES
/** After the hook's own timeout, how long its end (TERM, then KILL 5 s later on the VM) is waited for here. */
const END_GRACE_MS = 15_000
/** The longest timeout a stored setting may carry, as up --hook-timeout allows (the bound is the user's: hookTimeoutS). */
const MAX_HOOK_TIMEOUT_S = 86_400

/**
 * The longest a sweep waits for one hook (30 min), whatever the VM's --hook-timeout: a sweep holds its lock while
 * hooks run, and no other limit is enforced until it ends.
 */
export const SWEEP_HOOK_TIMEOUT_CAP_S = 1800

/**
 * How long a hook may run. The bound is the user's, kept here: this run's --hook-timeout, else the one up recorded
 * with the hook, else the default. The VM's stored timeout can only shorten it (its bytes are untrusted: a VM that
 * rewrote it must not hold a deletion longer), and so can a run's cap (a sweep's).
 */
export function hookTimeoutS(bounds: {
  /** This run's --hook-timeout, in seconds; null: none given. */
  runS: number | null
  /** What up --hook-timeout recorded in the VM's local record; null: an older record, without it. */
  recordedS: number | null
  /** What the VM's stored setting says. */
  vmS: number
  /** A run's cap (a sweep's); null: none. */
  capS: number | null
}): number {
  const userS = bounds.runS ?? bounds.recordedS ?? DEFAULT_HOOK_TIMEOUT_MS / 1000
  return Math.min(userS, bounds.vmS, bounds.capS ?? userS)
}

export interface HookSetting {
  command: string
  timeout_s: number
}

/**
 * Why an --on-delete command is refused, or null: at most MAX_HOOK_BYTES, and no control characters (a newline
 * included: one command line, which a log or a chat message cannot be made to misread). '' is allowed: it removes the hook.
 */
export function hookCommandProblem(command: string): string | null {
  if (Buffer.byteLength(command) > MAX_HOOK_BYTES) return `--on-delete is longer than ${MAX_HOOK_BYTES / 1024} KiB`
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(command)) return '--on-delete contains a control character (a newline, a tab, …)'
  return null
}

/** Stores the hook on the VM (root-owned, private), or removes it with null. */
export async function storeHook(session: SshSession, hook: HookSetting | null): Promise<void> {
  const script =
    hook === null
      ? `rm -f ${HOOK_CONF}`
      : [
          'set -eu',
          'umask 077',
          'install -d -m 0755 /etc/targon-fleet',
          `cat >${HOOK_CONF}.new`,
          `chown root:root ${HOOK_CONF}.new`,
          `chmod 0600 ${HOOK_CONF}.new`,
          `mv -f ${HOOK_CONF}.new ${HOOK_CONF}`,
        ].join('\n')
  const answer = await session.exec(`sudo -n sh -c ${shellQuote(script)}`, {
    maxBytes: 64 * 1024,
    stdin: hook === null ? '' : `${JSON.stringify(hook)}\n`,
  })
  if (answer.code !== 0)
    throw new TargonError('SSH_FAILED', `storing the pre-delete hook failed on the VM (exit ${answer.code ?? answer.signal})`, {
      hint: 'check that ubuntu has passwordless sudo on the VM, then run targon up --name <vm> --on-delete CMD again',
    })
}

/** Whether the VM has a hook stored (an adopting up without --on-delete keeps it, and records that it is there). */
export async function hasHook(session: SshSession): Promise<boolean> {
  const answer = await session.exec(`sudo -n test -e ${HOOK_CONF}`, {maxBytes: 4096})
  return answer.code === 0
}

/**
 * The last lines of a hook's output as results, events and chat carry them: control characters removed (a tab is a
 * space), at most TAIL_LINES lines and TAIL_BYTES bytes (the end kept), trailing blank lines dropped.
 */
export function outputTail(output: string): string {
  const lines = output
    .replaceAll('\r\n', '\n')
    .replaceAll('\t', ' ')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, '')
    .split('\n')
  while (lines.length > 0 && lines.at(-1)?.trim() === '') lines.pop()
  let tail = lines.slice(-TAIL_LINES).join('\n')
  // Bytes, not characters, from the end; a cut character is dropped whole.
  const bytes = Buffer.from(tail)
  if (bytes.length > TAIL_BYTES)
    tail = bytes
      .subarray(bytes.length - TAIL_BYTES)
      .toString()
      .replace(/^\uFFFD+/, '')
  return tail
}

/** What a running hook is told of its VM: the name only if it passed the name check, else empty. */
export function hookEnvironment(vm: {name: string | null; uid: string}, reason: DeleteReason): string {
  const name = vm.name !== null && WORKLOAD_NAME_PATTERN.test(vm.name) ? vm.name : ''
  const uid = API_IDENTIFIER_PATTERN.test(vm.uid) ? vm.uid : ''
  return `TARGON_VM_NAME=${shellQuote(name)} TARGON_VM_UID=${shellQuote(uid)} TARGON_DELETE_REASON=${shellQuote(reason)}`
}

/**
 * Runs the VM's hook, if it has one: its outcome, or null for a VM without a hook. Never throws: a VM that cannot be
 * reached is `unreachable` (deleted without its hook), an abort ends the hook (`interrupted`).
 */
export async function runHook(
  vm: KnownVm,
  reason: DeleteReason,
  options: VmReach & {signal: AbortSignal; clock: Clock; timeoutS?: number | null; timeoutCapS?: number | null},
): Promise<HookOutcome | null> {
  const elapsed = stopwatch(options.clock)
  const outcome = (status: HookOutcome['status'], exitCode: number | null, output: string, detail: string | null): HookOutcome => ({
    detail,
    duration_ms: elapsed(),
    exit_code: exitCode,
    output_tail: outputTail(output),
    status,
  })
  if (vm.status !== 'running') return outcome('unreachable', null, '', `not running (${vm.status}): deleted without its hook`)
  let session: SshSession | undefined
  try {
    session = (await openVm(vm, options)).session
    const stored = await session.exec(`sudo -n sh -c ${shellQuote(`[ ! -e ${HOOK_CONF} ] || cat ${HOOK_CONF}`)}`, {
      maxBytes: MAX_CONF_BYTES,
      signal: options.signal,
    })
    if (stored.aborted) return outcome('interrupted', null, '', 'interrupted before the hook ran')
    if (stored.code !== 0 || stored.overflowed)
      return outcome('unreachable', null, '', `its hook could not be read (exit ${stored.code ?? stored.signal}): deleted without it`)
    if (stored.stdout.trim() === '') return null
    const setting = parseHookSetting(stored.stdout)
    if (setting === null) return outcome('unreachable', null, '', 'its stored hook is not one (it fails the checks): deleted without it')
    const timeoutS = hookTimeoutS({
      capS: options.timeoutCapS ?? null,
      recordedS: vm.record?.hook_timeout_s ?? null,
      runS: options.timeoutS ?? null,
      vmS: setting.timeout_s,
    })
    const hook = {...setting, timeout_s: timeoutS}
    const script = [
      'set -o pipefail',
      'cd ~ 2>/dev/null || cd /',
      // TERM at the timeout, KILL 5 s later; the output's end only (the VM's bytes are untrusted, and read bounded).
      `${hookEnvironment(vm, reason)} timeout -k 5 ${hook.timeout_s} bash -c 'eval "$(cat)"' 2>&1 | tail -c ${REMOTE_TAIL_BYTES}`,
    ].join('\n')
    const within = AbortSignal.timeout(hook.timeout_s * 1000 + END_GRACE_MS)
    const executed = await session.exec(`bash -c ${shellQuote(script)}`, {
      maxBytes: MAX_READ_BYTES,
      signal: AbortSignal.any([options.signal, within]),
      stdin: hook.command,
    })
    const output = executed.stdout + executed.stderr
    if (executed.aborted && options.signal.aborted)
      return outcome('interrupted', executed.code, output, 'stopped by a signal; deleting at once')
    if (executed.aborted || executed.code === 124 || executed.code === 137)
      return outcome('timed-out', executed.code, output, `did not end within its timeout of ${hook.timeout_s} s`)
    if (executed.overflowed) return outcome('failed', executed.code, output, `printed more than ${MAX_READ_BYTES / 1024} KiB at once`)
    if (executed.code === 0) return outcome('ok', 0, output, null)
    return outcome('failed', executed.code, output, `exited ${executed.code ?? executed.signal}`)
  } catch (error) {
    if (options.signal.aborted) return outcome('interrupted', null, '', 'stopped by a signal; deleting at once')
    return outcome('unreachable', null, '', `could not reach it (${asTargonError(error).message}): deleted without its hook`)
  } finally {
    session?.close()
  }
}

/** The setting stored on the VM (untrusted bytes), or null when it fails the checks up --on-delete and --hook-timeout make. */
export function parseHookSetting(text: string): HookSetting | null {
  try {
    const parsed = JSON.parse(text) as Partial<HookSetting>
    if (typeof parsed.command !== 'string' || hookCommandProblem(parsed.command) !== null || parsed.command === '') return null
    if (
      typeof parsed.timeout_s !== 'number' ||
      !Number.isInteger(parsed.timeout_s) ||
      parsed.timeout_s < 1 ||
      parsed.timeout_s > MAX_HOOK_TIMEOUT_S
    )
      return null
    return {command: parsed.command, timeout_s: parsed.timeout_s}
  } catch {
    return null
  }
}

/** One line for a person: how the hook went. */
export function hookSummary(hook: HookOutcome): string {
  const took = `${(hook.duration_ms / 1000).toFixed(1)} s`
  switch (hook.status) {
    case 'ok': {
      return `hook ran in ${took} (exit 0)`
    }
    case 'unknown-here':
    case 'unreachable': {
      return `hook not run: ${hook.detail ?? hook.status}`
    }
    default: {
      return `hook ${hook.status} after ${took}${hook.exit_code === null ? '' : ` (exit ${hook.exit_code})`}: ${hook.detail ?? ''}`
    }
  }
}

/**
 * Runs the hooks of the VMs about to be deleted, `parallel` at once (as many as deletions), before their deletions
 * start, so that hook time is outside each deletion's budget. The outcome of each VM that has a hook, by uid.
 */
export async function runHooks(
  vms: KnownVm[],
  reasonOf: (vm: KnownVm) => DeleteReason,
  options: VmReach & {
    parallel: number
    signal: AbortSignal
    clock: Clock
    /** This run's --hook-timeout in seconds, over the one each VM's record keeps; null or absent: the recorded one. */
    timeoutS?: number | null
    /** The longest any hook may run here (a sweep's cap); null or absent: none. */
    timeoutCapS?: number | null
    onOutcome?: (vm: KnownVm, hook: HookOutcome) => void
  },
): Promise<Map<string, HookOutcome>> {
  const outcomes = new Map<string, HookOutcome>()
  await mapBounded(vms, options.parallel, async (vm) => {
    const hook = await runHook(vm, reasonOf(vm), options)
    if (hook === null) return
    outcomes.set(vm.uid, hook)
    options.onOutcome?.(vm, hook)
  })
  return outcomes
}

/** The hooks of these deletions in words, for a notification or the rendered result; '' when none ran. */
export function hooksInWords(results: readonly {name: string | null; uid: string; hook?: HookOutcome}[]): string[] {
  return results.flatMap((result) =>
    result.hook
      ? [
          `${result.name ?? result.uid}: ${hookSummary(result.hook)}${result.hook.output_tail === '' ? '' : `; its output ends:\n${result.hook.output_tail}`}`,
        ]
      : [],
  )
}
