/**
 * The install phase of bootstrap.sh on a VM over one SSH session. A check phase confirms a bootstrapped VM in one
 * call (and may run the shim phase's remote part right after it, shim.ts); otherwise the install phase is detached as
 * a transient systemd unit (so a dropped connection cannot kill apt half-way) and followed by polling its log and
 * result file.
 */
import {randomBytes} from 'node:crypto'
import * as z from 'zod'

import {BACKOFF} from '../../core/backoff.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {TargonError} from '../../core/errors.js'
import {textDecoder} from '../../core/lines.js'
import {poll} from '../../core/poll.js'
import {type SshSession, shellQuote} from '../ssh/session.js'
import {type Marker, parseMarker, readMarker} from './marker.js'
import {type BootstrapParams, CHECK_OUTPUT_BYTES, PHASE_OUTPUT_BYTES, SCRIPT_PATH, assertOk, envAssignments, must} from './remote-call.js'
import type {ShimOutput} from './shim.js'
import {SplitOutput, type StepEvent, StepParser, substepOf} from './steps.js'
import BOOTSTRAP_TEMPLATE from './bootstrap.sh'
import IDLE_SAMPLER from './idle-sampler.py'

/** The script uploaded to the VM: the bootstrap, with the idle sampler it installs (B11) inside. */
const BOOTSTRAP_SCRIPT = BOOTSTRAP_TEMPLATE.replace('@IDLE_SAMPLER_SOURCE@', () => IDLE_SAMPLER.trimEnd())

const LOG = '/var/log/targon-dstack-bootstrap.log'
const OUTCOME_FILE = '/var/lib/targon-dstack/last-run.json'
const UNIT = 'targon-dstack-bootstrap'
/** How much of the bootstrap log one read takes; a longer log is caught up over the next reads. */
const LOG_READ_BYTES = 4 * 1024 * 1024

/** B2: passwordless sudo, set up once with the VM password on an image that asks for it. */
async function enablePasswordlessSudo(session: SshSession, password: string | undefined): Promise<void> {
  if (!password)
    throw new TargonError('BOOTSTRAP_FAILED', 'sudo needs a password on this VM and no stored VM password is known', {
      hint: 'the VM was created elsewhere; enable passwordless sudo for ubuntu by hand',
    })
  const install = `umask 0337; printf '%s\\n' 'ubuntu ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/.90-targon-dstack && visudo -cf /etc/sudoers.d/.90-targon-dstack && mv /etc/sudoers.d/.90-targon-dstack /etc/sudoers.d/90-targon-dstack`
  await must(session, `sudo -S -p '' sh -c ${shellQuote(install)}`, 'enabling passwordless sudo', `${password}\n`)
}

/** The install phase's exit when a step would restart Docker under a dstack task at work (bootstrap.sh, B7). */
const DSTACK_BUSY = 75

/** Exit codes of the upload-and-check call, besides 0 (bootstrapped) and failures. */
const NEEDS_INSTALL = 3 // the check phase's own
const SUDO_ASKS_PASSWORD = 100

type CheckOutcome = {state: 'bootstrapped'; marker: Marker; shim?: ShimOutput} | {state: 'needs-install'} | {state: 'sudo-asks-password'}

/** Printed between the check phase and the shim phase when one remote call runs both. */
const SHIM_FOLLOWS = 'TARGON_SHIM_FOLLOWS'

/**
 * Checks sudo, uploads the script and runs its check phase (B0), all in one call. A bootstrapped VM is
 * confirmed by it, without starting and following a detached install; the check prints the marker then.
 */
async function uploadAndCheck(
  session: SshSession,
  params: BootstrapParams,
  executionId: string,
  onEvent: (event: StepEvent) => void,
  signal: AbortSignal | undefined,
  thenShim: boolean,
): Promise<CheckOutcome> {
  const install = `umask 022; mkdir -p /usr/local/lib/targon-dstack && cat > ${SCRIPT_PATH}.tmp && chmod 0755 ${SCRIPT_PATH}.tmp && mv -f ${SCRIPT_PATH}.tmp ${SCRIPT_PATH}`
  const check = `env ${envAssignments(params, 'check', executionId).join(' ')} /bin/bash ${SCRIPT_PATH}`
  // On a bootstrapped VM the shim phase follows in the same call, which saves a round trip on every repeat.
  const shim = thenShim
    ? ` && echo ${SHIM_FOLLOWS} && exec env ${envAssignments(params, 'shim', executionId).join(' ')} /bin/bash ${SCRIPT_PATH}`
    : ''
  const shimEvents: StepEvent[] = []
  const output = new SplitOutput(SHIM_FOLLOWS, new StepParser(onEvent), new StepParser((event) => shimEvents.push(event)))
  const command = `sudo -n true 2>/dev/null || exit ${SUDO_ASKS_PASSWORD}; sudo -n sh -c ${shellQuote(`${install} && ${check}${shim}`)}`
  const result = await session.exec(command, {
    maxBytes: PHASE_OUTPUT_BYTES,
    onStdout: (text) => output.push(text),
    signal,
    stdin: BOOTSTRAP_SCRIPT,
  })
  if (result.overflowed) assertOk(result, 'uploading and checking the bootstrap script')
  if (result.code === SUDO_ASKS_PASSWORD) return {state: 'sudo-asks-password'}
  if (result.code === NEEDS_INSTALL) return {state: 'needs-install'}
  const marker = parseMarker(/^TARGON_MARKER (.*)$/m.exec(output.before)?.[1] ?? '')
  if (output.split) return {marker, shim: {events: shimEvents, result: {...result, stdout: output.after}}, state: 'bootstrapped'}
  assertOk(result, 'uploading and checking the bootstrap script')
  return {marker, state: 'bootstrapped'}
}

const OutcomeSchema = z.object({exit_code: z.number(), failed_step: z.string().nullable(), run_id: z.string()})

/**
 * Install phase: unless the check finds it done, start (or attach to) the detached install and follow it until it
 * ends. With `thenShim`, a VM found bootstrapped also runs the shim phase's remote part in the same call (returned
 * as `shim`, for runShim to report).
 */
export async function runInstall(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
  thenShim = false,
  clock: Clock = REAL_CLOCK,
): Promise<{marker: Marker; shim?: ShimOutput}> {
  const executionId = params.executionId ?? randomBytes(6).toString('hex')
  let check = await uploadAndCheck(session, params, executionId, onEvent, signal, thenShim)
  if (check.state === 'sudo-asks-password') {
    await enablePasswordlessSudo(session, params.password)
    check = await uploadAndCheck(session, params, executionId, onEvent, signal, thenShim)
  }

  if (check.state === 'bootstrapped') return {marker: check.marker, shim: check.shim}
  let offset =
    Number(
      (await must(session, `sudo -n sh -c ${shellQuote(`stat -c %s ${LOG} 2>/dev/null || echo 0`)}`, 'reading the bootstrap log')).trim(),
    ) || 0
  const env = envAssignments(params, 'install', executionId).map((assignment) => `--setenv=${assignment}`)
  const start = await session.exec(
    `sudo -n systemd-run --unit=${UNIT} --collect -p StandardOutput=append:${LOG} -p StandardError=append:${LOG} ${env.join(' ')} /bin/bash ${SCRIPT_PATH}`,
    {maxBytes: CHECK_OUTPUT_BYTES},
  )
  // An earlier `up` may still be installing: follow that install instead of starting a second one.
  let expected: string | undefined = executionId
  if (start.code !== 0) {
    if (!/already exists|already active/i.test(start.stderr))
      throw new TargonError('BOOTSTRAP_FAILED', `could not start the bootstrap: ${start.stderr.trim()}`, {
        hint: 'check that the VM runs systemd',
      })
    expected = undefined
    offset = 0
  }

  const parser = new StepParser(onEvent)
  const decode = textDecoder()
  const separator = '@@targon@@'
  let inactivePolls = 0
  const done = await poll(
    async () => {
      const command = `tail -c +${offset + 1} ${LOG} | head -c ${LOG_READ_BYTES} | base64 -w0; echo; echo ${separator}; cat ${OUTCOME_FILE} 2>/dev/null; echo; echo ${separator}; systemctl is-active --quiet ${UNIT} && echo active || echo inactive`
      const [encoded = '', outcomeText = '', state = ''] = (
        await must(session, `sudo -n sh -c ${shellQuote(command)}`, 'following the bootstrap')
      ).split(`${separator}\n`)
      const chunk = Buffer.from(encoded.trim(), 'base64')
      offset += chunk.length
      // The log is read by byte offset: a character may be split between two reads.
      parser.push(decode(chunk))
      const result = parseOutcome(outcomeText)
      const finished = result && (expected === undefined ? state.trim() !== 'active' : result.run_id === expected)
      if (finished && result) {
        if (result.exit_code === DSTACK_BUSY)
          throw await bootstrapFailure(session, 'the host is busy with dstack, and Docker was left as it is', {
            hint: "run targon up --name <vm> again once dstack's tasks on it have ended",
          })
        if (result.exit_code !== 0) throw await bootstrapFailure(session, `install step ${failedStep(result.failed_step)} failed`)
        return {marker: await readMarker(session)}
      }

      if (state.trim() !== 'active' && ++inactivePolls > 3)
        throw await bootstrapFailure(session, 'the bootstrap stopped without reporting a result')
      return undefined
    },
    // The run's signal and deadline bound it.
    {clock, deadline: Number.POSITIVE_INFINITY, delayMs: BACKOFF.bootstrapLook, signal},
  )
  // Without a deadline, only a value (or an error) ends the wait.
  return done as {marker: Marker}
}

/** The step a failed install names, as a person reads it: "gpu-test (B8)"; "?" when it names none. */
function failedStep(id: string | null): string {
  if (id === null) return '?'
  const substep = substepOf(id)
  return substep ? `${substep.name} (${id})` : id
}

function parseOutcome(text: string) {
  try {
    const parsed = OutcomeSchema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

async function bootstrapFailure(session: SshSession, what: string, options: {hint?: string} = {}): Promise<TargonError> {
  const tail = (await session.exec(`sudo -n tail -n 40 ${LOG}`, {maxBytes: CHECK_OUTPUT_BYTES})).stdout
    .split('\n')
    .filter((line) => line && !line.startsWith('TARGON_STEP'))
  return new TargonError('BOOTSTRAP_FAILED', `${what}${tail.length > 0 ? `: ${tail.at(-1)}` : ''}`, {
    details: {log_tail: tail},
    hint: options.hint ?? `the full log is ${LOG} on the VM (targon ssh <vm> -- sudo tail -n 100 ${LOG})`,
  })
}
