/**
 * The start of a job on its VM: the unit started by one command, which with a look also takes the first look at the
 * job; a start whose answer was lost is asked about again rather than sent twice.
 */
import {TargonError} from '../../core/errors.js'
import {type ExecResult, type SshSession, shellQuote} from '../../adapters/ssh/session.js'
import {FIRST_LOOK_MS, LOOK_MAX_BYTES, type Look, lookScript, parseLook} from './follow.js'
import {type JobRecord, jobDir, parseState, commandScript, startScript, stateScript} from './job.js'

/** Between the start's answer and the first look's, in the output of the start with a look. */
const STARTED = '@@targon-started@@'

/**
 * Starts the job; the session to follow it on is returned, and with `look`, the first look at the job, made by the
 * same command (it waits on the VM, FIRST_LOOK_MS at most, for the job to end or print: a short job costs one round
 * trip less). A connection lost before the start was answered leaves it unclear whether the unit runs: the VM is
 * asked again over a new connection, and the job is followed when it shows there (running or ended), rather than
 * started twice or reported as not started.
 */
export async function startJob(
  session: SshSession,
  record: JobRecord,
  env: {name: string; value: string}[],
  reopen: () => Promise<SshSession>,
  look: boolean,
): Promise<{session: SshSession; firstLook?: Look}> {
  let started: ExecResult
  const command = look ? `${startScript(record)}\nset +e\necho ${STARTED}\n${lookScript(record.id, 0, FIRST_LOOK_MS)}` : startScript(record)
  // Whether the marker that follows the unit's start came, read as the answer streams (a drop loses the answer).
  let startedForSure = false
  let carry = ''
  const onStdout = (chunk: string) => {
    const text = carry + chunk
    if (text.includes(STARTED)) startedForSure = true
    carry = text.slice(-STARTED.length)
  }
  try {
    started = await session.exec(command, {maxBytes: 64 * 1024 + LOOK_MAX_BYTES, onStdout, stdin: commandScript(record, env)})
  } catch (error) {
    if (!(error instanceof TargonError && error.code === 'SSH_FAILED')) throw error
    // Lost during the first look: the job runs, and the follow connects again (or says why it cannot, with the job).
    if (startedForSure) return {session}
    const again = await reopen().catch(() => undefined)
    if (again === undefined) throw mayHaveStarted(error, record.id)
    const answer = await again.exec(stateScript(record.id), {maxBytes: 1024}).catch(() => undefined)
    const state = answer === undefined ? undefined : parseState(answer.stdout)
    if (state === undefined || state.state === 'lost') {
      again.close()
      throw answer === undefined ? mayHaveStarted(error, record.id) : error
    }
    return {session: again}
  }
  if (started.code !== 0) {
    // No unit runs: the job's files go again, so that no job that never ran is listed.
    await session.exec(`rm -rf -- ${shellQuote(jobDir(record.id))}`, {maxBytes: 64 * 1024}).catch(() => undefined)
    const why = started.stderr.trim().split('\n').at(-1) ?? ''
    throw new TargonError('REMOTE_COMMAND_FAILED', `could not start the job: ${why || `exit code ${started.code}`}`, {
      hint: 'the VM needs systemd and passwordless sudo for ubuntu, as the bootstrap does',
    })
  }
  const answer = started.stdout.split(`${STARTED}\n`)[1]
  if (answer === undefined) return {session}
  try {
    return {firstLook: parseLook(answer, ''), session}
  } catch {
    // An unreadable look: the follow makes its own.
    return {session}
  }
}

/** A start whose answer was lost, on a VM that could not be asked since: the job may run, and the error names it. */
function mayHaveStarted(error: TargonError, id: string): TargonError {
  return error.with({
    hint: `job ${id} may have started and run on: targon jobs lists it, targon jobs cancel ${id} stops it`,
    message: `${error.message}, while starting job ${id}`,
  })
}
