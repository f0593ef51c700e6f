/**
 * Follows a job's log on its VM, from its start, until the job ends: each look reads the job's state first, then the log from the
 * byte offset reached (bounded per look), so that the last look after the end has the whole log. While the log is
 * quiet, a look waits on the VM (up to a second) for the job to end or print, so an end is seen as it happens. Lines are cut to a
 * bounded length and their control characters escaped; the last ones are kept for the result. A dropped connection
 * is opened again a few times: the job runs on the VM whatever happens to this side.
 */
import type {Clock} from '../../core/clock.js'
import {TargonError, abortError} from '../../core/errors.js'
import {LineSplitter} from '../../core/lines.js'
import {printable} from '../../core/output.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {type EndState, JOB_STATE_FUNCTIONS, jobDir, parseState, stateScript} from './job.js'

/** Lines of the log kept for the result. */
export const TAIL_LINES = 20
/** How much of a log line is shown and kept (a job may print a megabyte without a newline). */
export const LINE_CHARS = 4096
/** Log bytes read per look. */
const READ_BYTES = 256 * 1024
const SEPARATOR = '@@targon-job@@'
/** Looks come quicker while the log grows, and no slower than this while it does not. */
const MIN_LOOK_MS = 250
const MAX_LOOK_MS = 1000
/** Connections opened again after a drop, before the follow gives up (the job goes on). */
const RECONNECTS = 3

export interface FollowOptions {
  /** Each line of the log, bounded and printable. */
  onLine?: (line: string) => void
  signal?: AbortSignal
  clock: Clock
  /** Opens the VM's connection again after a drop. */
  reopen: () => Promise<SshSession>
  /** Stop at the end of what is there now, even while the job runs (jobs logs without -f). */
  once?: boolean
  /** The first look, already made (from the log's start) with the job's start (by `targon run`). */
  firstLook?: Look
}

export interface Followed extends EndState {
  tail: string[]
  /** The session in use at the end (a new one after a drop). */
  session: SshSession
}

export async function followJob(first: SshSession, id: string, options: FollowOptions): Promise<Followed> {
  const {clock} = options
  let session = first
  let offset = 0
  // How long the next look may wait on the VM for the job to end or print; none while the log grows, or with once.
  let wait = options.once ? 0 : MAX_LOOK_MS
  let drops = 0
  const tail: string[] = []
  const splitter = new LineSplitter((raw) => {
    const line = printable(raw.length > LINE_CHARS ? `${raw.slice(0, LINE_CHARS)}…` : raw)
    tail.push(line)
    if (tail.length > TAIL_LINES) tail.shift()
    options.onLine?.(line)
  })
  let firstLook = options.firstLook
  for (;;) {
    if (options.signal?.aborted) throw abortError(options.signal)
    let look: Look
    try {
      look = firstLook ?? (await lookAt(session, id, offset, options.once ? 0 : wait, options.signal))
      firstLook = undefined
      drops = 0
    } catch (error) {
      if (options.signal?.aborted) throw abortError(options.signal)
      if (!(error instanceof TargonError && error.code === 'SSH_FAILED') || ++drops > RECONNECTS) throw error
      await clock.sleep(1000 * 2 ** drops, options.signal)
      try {
        session = await options.reopen()
      } catch (reopenError) {
        // Still unreachable: the next look fails too and counts as another drop.
        if (!(reopenError instanceof TargonError && reopenError.code === 'SSH_FAILED')) throw reopenError
      }
      continue
    }

    offset += look.chunk.length
    splitter.push(look.chunk)
    const more = look.chunk.length >= READ_BYTES
    if (!more && (look.state.state !== 'running' || options.once)) {
      splitter.flush()
      return {...look.state, session, tail}
    }

    // A growing log is read in batches; a quiet one is waited on by the VM (the next look), which answers at once
    // when the job ends or prints: a short job is not kept waiting for a look here.
    wait = look.chunk.length > 0 ? 0 : Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, wait * 1.5))
    if (look.chunk.length > 0 && !more) await clock.sleep(MIN_LOOK_MS, options.signal)
  }
}

/**
 * How a look waits on the VM: it checks every QUICK_STEP_S for its first QUICK_STEPS checks (so that the end of a
 * short job, such as figure 16's, is seen within about 10 ms), then every SLOW_STEP_S, so that a quiet job followed
 * for hours costs its VM little. A check is a file test and a stat; every STATE_EVERY-th also asks systemd whether the
 * unit still runs (a job killed with its unit writes no exit code).
 */
const QUICK_STEP_S = 0.01
const QUICK_STEPS = 20
const SLOW_STEP_S = 0.05
const STATE_EVERY = 5

/**
 * The job's state and its log from `offset`; first, for up to `waitMs`, the VM waits for the job to end or its log to
 * pass `offset`, so that an end is seen when it happens rather than at the next look.
 */
async function lookAt(session: SshSession, id: string, offset: number, waitMs: number, signal?: AbortSignal): Promise<Look> {
  const result = await session.exec(lookScript(id, offset, waitMs), {maxBytes: LOOK_MAX_BYTES, signal})
  if (result.aborted) throw abortError(signal)
  return parseLook(result.stdout, result.code === 0 ? '' : result.stderr || `exit code ${result.code}`)
}

export type Look = {state: EndState; chunk: Buffer}

/** What a look may print: the state line and the log's chunk in base64. */
export const LOOK_MAX_BYTES = 2 * READ_BYTES

/** How long the look that comes with the job's start (`targon run`) may wait on the VM for the job to end or print. */
export const FIRST_LOOK_MS = MAX_LOOK_MS

/** Shell text of a look (see lookAt), read back by parseLook. */
export function lookScript(id: string, offset: number, waitMs: number): string {
  const log = shellQuote(`${jobDir(id)}/log`)
  const quick = Math.min(QUICK_STEPS, Math.floor(waitMs / 1000 / QUICK_STEP_S))
  const steps = quick + Math.floor((waitMs / 1000 - quick * QUICK_STEP_S) / SLOW_STEP_S)
  const ended = `[ -f ${shellQuote(`${jobDir(id)}/exit_code`)} ] || [ -f ${shellQuote(`${jobDir(id)}/cancelled`)} ]`
  const waitFor =
    steps === 0
      ? ''
      : `${JOB_STATE_FUNCTIONS}\nn=0; while [ $n -lt ${steps} ] && ! { ${ended}; } && [ "$(stat -c %s ${log} 2>/dev/null || echo 0)" -le ${offset} ]; do [ $((n % ${STATE_EVERY})) -eq ${STATE_EVERY - 1} ] && [ "$(job_state ${shellQuote(id)})" != running ] && break; [ $n -lt ${quick} ] && sleep ${QUICK_STEP_S} || sleep ${SLOW_STEP_S}; n=$((n+1)); done; `
  // Only a log that grew past the offset is read: a quiet look costs the VM three processes less.
  const read = `if [ "$(stat -c %s ${log} 2>/dev/null || echo 0)" -gt ${offset} ]; then tail -c +${offset + 1} ${log} | head -c ${READ_BYTES} | base64 -w0; fi`
  return `${waitFor}${stateScript(id)}; echo ${SEPARATOR}; ${read}`
}

/** A look's answer (`failure`: why the command failed, else empty); an unreadable one is BAD_RESPONSE. */
export function parseLook(stdout: string, failure: string): Look {
  const [stateLine = '', encoded = ''] = stdout.split(`${SEPARATOR}\n`)
  const state = parseState(stateLine)
  if (failure !== '' || !state)
    throw new TargonError(
      'BAD_RESPONSE',
      `the VM answered the job's state unreadably: ${printable(failure.trim() || stateLine.slice(0, 200))}`,
      {
        hint: 'check the VM with targon ssh',
      },
    )
  return {chunk: Buffer.from(encoded.trim(), 'base64'), state}
}
