/** What every call that runs bootstrap.sh on a VM shares: where the script lives, its parameters, output bounds. */
import {TargonError} from '../../core/errors.js'
import {type ExecResult, type SshSession, shellQuote} from '../ssh/session.js'
import {validateDstackVersion} from '../settings/dstack-version.js'

export const SCRIPT_PATH = '/usr/local/lib/targon-dstack/bootstrap.sh'

/**
 * What a call to the VM may print before its channel is closed (the VM's bytes are untrusted): a check or a read
 * (a log tail, the marker, a chunk of the log), and a phase of the script (step lines and a little more).
 */
export const CHECK_OUTPUT_BYTES = 8 * 1024 * 1024
export const PHASE_OUTPUT_BYTES = 4 * 1024 * 1024

export interface BootstrapParams {
  /** Names one execution of the script (TARGON_RUN_ID, which last-run.json repeats); absent: a new one. */
  executionId?: string
  toolVersion: string
  dstackVersion: string
  reinstall: boolean
  /** up --force-shim: install the pinned shim on a host that dstack owns (refused on the VM while a task runs). */
  forceShim: boolean
  gpuTest: boolean
  /** The first wait before retrying a failed pull of the GPU smoke test's image (doubled on each retry). */
  pullRetryDelayMs: number
  /** The VM password, used once to enable passwordless sudo where the image lacks it. */
  password?: string
  /** How long shim-start waits for a healthy shim. */
  shimHealthTimeoutMs: number
}

export function envAssignments(params: BootstrapParams, phase: 'check' | 'install' | 'shim', executionId: string): string[] {
  return [
    `TARGON_PHASE=${phase}`,
    `TARGON_RUN_ID=${executionId}`,
    `TARGON_TOOL_VERSION=${params.toolVersion}`,
    `TARGON_DSTACK_VERSION=${validateDstackVersion(params.dstackVersion)}`,
    `TARGON_REINSTALL=${params.reinstall ? 1 : 0}`,
    `TARGON_FORCE_SHIM=${params.forceShim ? 1 : 0}`,
    `TARGON_GPU_TEST=${params.gpuTest ? 1 : 0}`,
    `TARGON_PULL_RETRY_DELAY_MS=${Math.round(params.pullRetryDelayMs)}`,
  ].map((assignment) => shellQuote(assignment))
}

export function assertOk(result: ExecResult, what: string): void {
  if (result.overflowed)
    throw new TargonError('BOOTSTRAP_FAILED', `${what}: the VM printed more than such a call can, and was cut off`, {
      hint: 'run targon up --name <vm> --reinstall; if it happens again, the VM is not what targon installed',
    })
  if (result.code !== 0) {
    throw new TargonError(
      'BOOTSTRAP_FAILED',
      `${what} failed on the VM (exit ${result.code ?? result.signal}): ${result.stderr.trim().split('\n').at(-1) ?? ''}`,
      {
        details: {stderr: result.stderr.slice(-2000)},
        hint: 'run targon up --name <vm> again; the bootstrap resumes where it stopped',
      },
    )
  }
}

export async function must(session: SshSession, command: string, what: string, stdin?: string): Promise<string> {
  const result = await session.exec(command, {maxBytes: CHECK_OUTPUT_BYTES, stdin})
  assertOk(result, what)
  return result.stdout
}
