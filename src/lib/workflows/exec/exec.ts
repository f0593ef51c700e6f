/**
 * `targon exec`: one command on every VM of a fleet (or the VMs named), in parallel and bounded, over one SSH
 * connection per VM with its pinned host key. Output comes back line by line, each whole line at once, so lines
 * of different VMs never interleave.
 */
import {LineSplitter} from '../../core/lines.js'
import type {ExecResult, ExecVmResult} from './schema.js'
import {type VmReach, announced, fanOut, openVm, resultOrFailure} from '../../domain/fleet/fan-out.js'
import {selectVms} from '../select-vms.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import type {PinnedKey} from '../../adapters/ssh/connect-info.js'
import {asTargonError} from '../../core/errors.js'
import {type Clock, stopwatch} from '../../core/clock.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'

import type {FanOutRun} from '../../domain/fleet/run.js'

export const DEFAULT_EXEC_PARALLEL = 8
/** Lines of output kept per VM for the result. */
export const EXEC_TAIL_LINES = 20
/** How much of each such line is kept (a VM's line may be a megabyte, and every VM's result is held to the end). */
const TAIL_LINE_CHARS = 4096

export interface ExecOptions extends VmReach {
  org: string
  owners: OwnerScope
  fleet: string
  /** VM names, uids or labels; empty: every running VM of the fleet. */
  targets: string[]
  command: string
  parallel: number
  signal?: AbortSignal
  onLine?: (vm: string, stream: 'stderr' | 'stdout', line: string) => void
  info?: (message: string) => void
}

/** Each VM's command is announced on the run's events (started, then done or failed). */
export async function runExec(run: FanOutRun, client: TargonClient, state: LocalState, options: ExecOptions): Promise<ExecResult> {
  const vms = await selectVms(run, client, state, options)
  const results = await fanOut(vms, options.parallel, (vm) =>
    announced(
      run.events,
      'exec',
      vm,
      () => runOne(vm, options, run.clock),
      (result) => ({
        detail: result.exit_code === null ? result.error : `exit code ${result.exit_code}`,
        durationMs: result.duration_ms,
        error: {code: 'REMOTE_COMMAND_FAILED', message: result.error ?? `exit code ${result.exit_code}`},
        ok: result.exit_code === 0,
      }),
    ),
  )
  const failed = results.filter((result) => result.exit_code !== 0)
  const result: ExecResult = {command: options.command, fleet: options.targets.length > 0 ? null : options.fleet, org: options.org, results}
  return resultOrFailure(result, failed.length, {
    code: 'REMOTE_COMMAND_FAILED',
    hint: 'see the per-VM results (exit_code, error, tail)',
    message: `the command failed on ${failed.length} of ${results.length} VMs: ${failed.map((each) => each.name).join(', ')}`,
    signal: options.signal,
  })
}

async function runOne(vm: KnownVm, options: ExecOptions, clock: Clock): Promise<ExecVmResult> {
  const name = vm.name ?? vm.uid
  const elapsed = stopwatch(clock)
  const tail: string[] = []
  const emit = (stream: 'stderr' | 'stdout', line: string) => {
    tail.push(line.length > TAIL_LINE_CHARS ? `${line.slice(0, TAIL_LINE_CHARS)}…` : line)
    if (tail.length > EXEC_TAIL_LINES) tail.shift()
    options.onLine?.(name, stream, line)
  }

  const stdout = new LineSplitter((line) => emit('stdout', line))
  const stderr = new LineSplitter((line) => emit('stderr', line))
  let hostKey: PinnedKey | null = null
  try {
    const opened = await openVm(vm, {...options, clock})
    const {session} = opened
    hostKey = opened.hostKey
    try {
      const executed = await session.exec(options.command, {
        onStderr: (chunk) => stderr.push(chunk),
        onStdout: (chunk) => stdout.push(chunk),
        signal: options.signal,
      })
      stdout.flush()
      stderr.flush()
      return {
        duration_ms: elapsed(),
        error: executed.aborted
          ? 'interrupted: the remote command was sent SIGTERM'
          : executed.signal
            ? `killed by ${executed.signal}`
            : null,
        exit_code: executed.aborted ? null : (executed.code ?? 255),
        host_key: hostKey,
        name,
        tail,
        uid: vm.uid,
      }
    } finally {
      session.close()
    }
  } catch (error) {
    stdout.flush()
    stderr.flush()
    const failure = asTargonError(error)
    return {
      duration_ms: elapsed(),
      error: `${failure.code}: ${failure.message}`,
      exit_code: null,
      host_key: hostKey,
      name,
      tail,
      uid: vm.uid,
    }
  }
}
