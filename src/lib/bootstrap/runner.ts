/**
 * Runs bootstrap.sh on a VM over one SSH session. A check phase confirms a bootstrapped VM in
 * one call; otherwise the install phase is detached as a transient systemd unit (so a dropped
 * connection cannot kill apt half-way) and followed by polling its log and result file; the shim
 * phase is short and runs in the foreground; the shim's health is checked through a forwarded
 * channel, as the dstack server does.
 */
import {LineSplitter, textDecoder} from '../core/lines.js'
import {randomBytes} from 'node:crypto'
import * as z from 'zod'

import type {BootstrapStep} from '../contract.js'
import {TargonError} from '../core/errors.js'
import {poll} from '../core/poll.js'
import {BACKOFF} from '../core/backoff.js'
import {validateDstackVersion} from './dstack-version.js'
import {type ExecResult, type SshSession, shellQuote} from '../ssh/session.js'
import BOOTSTRAP_TEMPLATE from './bootstrap.sh'
import IDLE_SAMPLER from './idle-sampler.py'

/** The script uploaded to the VM: the bootstrap, with the idle sampler it installs (B11) inside. */
const BOOTSTRAP_SCRIPT = BOOTSTRAP_TEMPLATE.replace('@IDLE_SAMPLER_SOURCE@', () => IDLE_SAMPLER.trimEnd())

export const SCRIPT_PATH = '/usr/local/lib/targon-dstack/bootstrap.sh'
const LOG = '/var/log/targon-dstack-bootstrap.log'
const LAST_RUN = '/var/lib/targon-dstack/last-run.json'
const MARKER = '/var/lib/targon-dstack/bootstrap.json'
const UNIT = 'targon-dstack-bootstrap'
const SHIM_PORT = 10998
/**
 * What a call to the VM may print before its channel is closed (the VM's bytes are untrusted): a check or a read
 * (a log tail, the marker, a chunk of the log), and a phase of the script (step lines and a little more).
 */
const CHECK_OUTPUT_BYTES = 8 * 1024 * 1024
const PHASE_OUTPUT_BYTES = 4 * 1024 * 1024
/** How much of the bootstrap log one read takes; a longer log is caught up over the next reads. */
const LOG_READ_BYTES = 4 * 1024 * 1024

export interface Substep {
  /** The script's own id (TARGON_STEP lines, last-run.json): internal to the bootstrap. */
  id: string
  /** What events and up --json call it (contract.ts BOOTSTRAP_STEPS). */
  name: BootstrapStep
  title: string
}

export const INSTALL_STEPS: Substep[] = [
  {id: 'B0', name: 'marker-check', title: 'marker check'},
  {id: 'B1', name: 'preflight', title: 'preflight (OS, arch, NVIDIA driver)'},
  {id: 'B3', name: 'sshd-forwarding', title: 'sshd TCP forwarding'},
  {id: 'B4', name: 'apt-install', title: 'apt: repositories, one update, one install'},
  {id: 'B5', name: 'docker-service', title: 'Docker service'},
  {id: 'B6', name: 'nvidia-toolkit', title: 'NVIDIA Container Toolkit'},
  {id: 'B7', name: 'docker-daemon-config', title: 'daemon.json (nvidia runtime, cgroupfs)'},
  {id: 'B8', name: 'gpu-test', title: 'GPU smoke test'},
  {id: 'B9', name: 'firewall', title: 'firewall (left untouched)'},
  {id: 'B11', name: 'idle-sampler', title: 'idle sampler'},
  {id: 'B10', name: 'write-marker', title: 'marker'},
]

export const SHIM_STEPS: Substep[] = [
  {id: 'S0', name: 'dstack-takeover', title: 'dstack takeover check'},
  {id: 'S1', name: 'shim-binary', title: 'dstack-shim binary'},
  {id: 'S3', name: 'shim-home', title: 'shim home'},
  {id: 'S4', name: 'shim-env', title: 'shim.env'},
  {id: 'S5', name: 'shim-unit', title: 'systemd unit'},
  {id: 'S6', name: 'shim-service', title: 'shim service'},
  {id: 'S9', name: 'shim-marker', title: 'marker'},
  {id: 'S7', name: 'shim-health', title: 'health check'},
]

/** A step of the script by its id; undefined for what is none (a VM's output is untrusted). */
export function substepOf(id: string): Substep | undefined {
  return [...INSTALL_STEPS, ...SHIM_STEPS].find((substep) => substep.id === id)
}

export interface StepEvent {
  id: string
  event: 'fail' | 'ok' | 'skip' | 'start'
  detail: string
  /** When it happened, in ms on the VM's clock (durations are differences of these). */
  at: number
}

export interface BootstrapParams {
  runId?: string
  toolVersion: string
  dstackVersion: string
  reinstall: boolean
  gpuTest: boolean
  /** The first wait before retrying a failed pull of the GPU smoke test's image (doubled on each retry). */
  pullRetryDelayMs: number
  /** The VM password, used once to enable passwordless sudo where the image lacks it. */
  password?: string
  /** How long shim-start waits for a healthy shim. */
  shimHealthTimeoutMs: number
}

/** What the idle sampler on the VM is told (/etc/targon-fleet/idle.conf, see idle-sampler.py); absent: as it was. */
export interface IdleSettings {
  interval_s: number
  /** A GPU at or above this utilisation (percent) is activity. */
  threshold_pct: number
  /** up --idle: the VM's own idle limit. */
  limit_s?: number
  /** up --idle-check: a command run as ubuntu every interval, exit 0 meaning idle; '' removes it. */
  check?: string
  /** up --idle-containers: a running container is activity. */
  containers?: boolean
}

/** The GPU utilisation at or above which a GPU counts as busy. */
export const IDLE_GPU_THRESHOLD_PCT = 10

/**
 * Tells the VM's idle sampler its settings: the interval and threshold always, the limit, check and containers only
 * when this run gives them (adopting a VM keeps what an earlier up set; an empty check removes it). The file is
 * replaced and the sampler restarted only when something changed; the unit that runs the user's check as ubuntu is
 * started or stopped to match.
 */
export async function configureIdle(session: SshSession, idle: IdleSettings): Promise<void> {
  const script = [
    'set -eu',
    // The services restarted below keep the usual umask (their check verdict is read by the sampler).
    'umask 022',
    'conf=/etc/targon-fleet/idle.conf',
    // The JSON on stdin, merged into what is there.
    `python3 -c ${shellQuote(MERGE_IDLE_CONF)} "$conf"`,
    // A check command may carry a token: 0640 root:targon-idle, read by the sampler's group and by ubuntu through sudo.
    'chown root:targon-idle "$conf.new"',
    'chmod 0640 "$conf.new"',
    `flag() { python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1])).get(sys.argv[2]) else 0)' "$conf.new" "$1"; }`,
    // Containers are listed through sudoers (bootstrap B11), never the docker group, which earlier versions joined. A
    // running sampler keeps the groups it started with: taken out of docker, it is restarted to drop it.
    'dropped=0',
    'if gpasswd -d targon-idle docker >/dev/null 2>&1; then dropped=1; fi',
    `check=$(flag check)`,
    `if cmp -s "$conf.new" "$conf"; then rm -f "$conf.new"; chown root:targon-idle "$conf"; chmod 0640 "$conf"; if [ "$dropped" = 1 ]; then systemctl restart targon-fleet-idle; fi; else mv -f "$conf.new" "$conf"; systemctl restart targon-fleet-idle; fi`,
    `if [ "$check" = 1 ]; then systemctl enable targon-fleet-idle-check; systemctl restart targon-fleet-idle-check; else systemctl disable --now targon-fleet-idle-check >/dev/null 2>&1 || true; fi`,
  ].join('\n')
  await must(session, `sudo -n sh -c ${shellQuote(script)}`, 'configuring the idle sampler', `${JSON.stringify(idle)}\n`)
}

/** Merges the JSON object on stdin into the config file (argument 1), written next to it as .new. */
const MERGE_IDLE_CONF = [
  'import json, sys',
  'path = sys.argv[1]',
  'try:',
  '    current = json.load(open(path))',
  '    current = current if isinstance(current, dict) else {}',
  'except Exception:',
  '    current = {}',
  'current.update(json.load(sys.stdin))',
  'json.dump(current, open(path + ".new", "w"), sort_keys=True)',
].join('\n')

export const MarkerSchema = z.object({
  script_version: z.string().nullish(),
  docker: z.object({version: z.string().nullish()}).nullish(),
  nvidia_ctk_version: z.string().nullish(),
  driver_version: z.string().nullish(),
  gpus: z.object({count: z.number().nullish(), name: z.string().nullish()}).nullish(),
  gpu_check: z.string().nullish(),
  shim: z.object({version: z.string().nullish()}).nullish(),
})
export type Marker = z.infer<typeof MarkerSchema>

/** Splits streamed text into TARGON_STEP events; other lines are log text. */
export class StepParser {
  private readonly lines: LineSplitter
  constructor(onEvent: (event: StepEvent) => void) {
    this.lines = new LineSplitter((line) => {
      const match = /^TARGON_STEP (\S+) \S+ (start|ok|skip|fail) @(\d+)(?: (.*))?$/.exec(line.trim())
      if (match) onEvent({at: Number(match[3]), detail: match[4] ?? '', event: match[2] as StepEvent['event'], id: match[1] as string})
    })
  }

  push(text: string): void {
    this.lines.push(text)
  }
}

function envAssignments(params: BootstrapParams, phase: 'check' | 'install' | 'shim', runId: string): string[] {
  return [
    `TARGON_PHASE=${phase}`,
    `TARGON_RUN_ID=${runId}`,
    `TARGON_TOOL_VERSION=${params.toolVersion}`,
    `TARGON_DSTACK_VERSION=${validateDstackVersion(params.dstackVersion)}`,
    `TARGON_REINSTALL=${params.reinstall ? 1 : 0}`,
    `TARGON_GPU_TEST=${params.gpuTest ? 1 : 0}`,
    `TARGON_PULL_RETRY_DELAY_MS=${Math.round(params.pullRetryDelayMs)}`,
  ].map((assignment) => shellQuote(assignment))
}

function assertOk(result: ExecResult, what: string): void {
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

async function must(session: SshSession, command: string, what: string, stdin?: string): Promise<string> {
  const result = await session.exec(command, {maxBytes: CHECK_OUTPUT_BYTES, stdin})
  assertOk(result, what)
  return result.stdout
}

/** B2: passwordless sudo, set up once with the VM password on an image that asks for it. */
async function enablePasswordlessSudo(session: SshSession, password: string | undefined): Promise<void> {
  if (!password)
    throw new TargonError('BOOTSTRAP_FAILED', 'sudo needs a password on this VM and no stored VM password is known', {
      hint: 'the VM was created elsewhere; enable passwordless sudo for ubuntu by hand',
    })
  const install = `umask 0337; printf '%s\\n' 'ubuntu ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/.90-targon-dstack && visudo -cf /etc/sudoers.d/.90-targon-dstack && mv /etc/sudoers.d/.90-targon-dstack /etc/sudoers.d/90-targon-dstack`
  await must(session, `sudo -S -p '' sh -c ${shellQuote(install)}`, 'enabling passwordless sudo', `${password}\n`)
}

/** Exit codes of the upload-and-check call, besides 0 (bootstrapped) and failures. */
const NEEDS_INSTALL = 3 // the check phase's own
const SUDO_ASKS_PASSWORD = 100

type CheckOutcome = {state: 'bootstrapped'; marker: Marker; shim?: ShimRun} | {state: 'needs-install'} | {state: 'sudo-asks-password'}

/** Printed between the check phase and the shim phase when one remote call runs both. */
const SHIM_FOLLOWS = 'TARGON_SHIM_FOLLOWS'

/** The shim phase's remote part, already run right after a check that found the VM bootstrapped. */
export interface ShimRun {
  result: ExecResult
  events: StepEvent[]
}

/**
 * Checks sudo, uploads the script and runs its check phase (B0), all in one call. A bootstrapped VM is
 * confirmed by it, without starting and following a detached run; the check prints the marker then.
 */
async function uploadAndCheck(
  session: SshSession,
  params: BootstrapParams,
  runId: string,
  onEvent: (event: StepEvent) => void,
  signal: AbortSignal | undefined,
  thenShim: boolean,
): Promise<CheckOutcome> {
  const install = `umask 022; mkdir -p /usr/local/lib/targon-dstack && cat > ${SCRIPT_PATH}.tmp && chmod 0755 ${SCRIPT_PATH}.tmp && mv -f ${SCRIPT_PATH}.tmp ${SCRIPT_PATH}`
  const check = `env ${envAssignments(params, 'check', runId).join(' ')} /bin/bash ${SCRIPT_PATH}`
  // On a bootstrapped VM the shim phase follows in the same call, which saves a round trip on every repeat.
  const shim = thenShim
    ? ` && echo ${SHIM_FOLLOWS} && exec env ${envAssignments(params, 'shim', runId).join(' ')} /bin/bash ${SCRIPT_PATH}`
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

/** Routes a command's output to one parser until a separator line, and to another after it. */
export class SplitOutput {
  before = ''
  after = ''
  split = false

  constructor(
    private readonly separator: string,
    private readonly first: StepParser,
    private readonly second: StepParser,
  ) {}

  push(text: string): void {
    if (this.split) {
      this.after += text
      this.second.push(text)
      return
    }

    const at = `\n${this.before}${text}`.indexOf(`\n${this.separator}\n`)
    if (at === -1) {
      this.before += text
      this.first.push(text)
      return
    }

    const combined = this.before + text
    const head = combined.slice(0, at)
    const tail = combined.slice(at + this.separator.length + 1)
    this.first.push(head.slice(this.before.length))
    this.before = head
    this.split = true
    this.after = tail
    this.second.push(tail)
  }
}

const LastRunSchema = z.object({exit_code: z.number(), failed_step: z.string().nullable(), run_id: z.string()})

/**
 * Install phase: unless the check finds it done, start (or attach to) the detached run and follow it until it
 * ends. With `thenShim`, a VM found bootstrapped also runs the shim phase's remote part in the same call (returned
 * as `shim`, for runShim to report).
 */
export async function runInstall(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
  thenShim = false,
): Promise<{marker: Marker; shim?: ShimRun}> {
  const runId = params.runId ?? randomBytes(6).toString('hex')
  let check = await uploadAndCheck(session, params, runId, onEvent, signal, thenShim)
  if (check.state === 'sudo-asks-password') {
    await enablePasswordlessSudo(session, params.password)
    check = await uploadAndCheck(session, params, runId, onEvent, signal, thenShim)
  }

  if (check.state === 'bootstrapped') return {marker: check.marker, shim: check.shim}
  let offset =
    Number(
      (await must(session, `sudo -n sh -c ${shellQuote(`stat -c %s ${LOG} 2>/dev/null || echo 0`)}`, 'reading the bootstrap log')).trim(),
    ) || 0
  const env = envAssignments(params, 'install', runId).map((assignment) => `--setenv=${assignment}`)
  const start = await session.exec(
    `sudo -n systemd-run --unit=${UNIT} --collect -p StandardOutput=append:${LOG} -p StandardError=append:${LOG} ${env.join(' ')} /bin/bash ${SCRIPT_PATH}`,
    {maxBytes: CHECK_OUTPUT_BYTES},
  )
  // An earlier `up` may still be installing: follow that run instead of starting a second one.
  let expected: string | undefined = runId
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
      const command = `tail -c +${offset + 1} ${LOG} | head -c ${LOG_READ_BYTES} | base64 -w0; echo; echo ${separator}; cat ${LAST_RUN} 2>/dev/null; echo; echo ${separator}; systemctl is-active --quiet ${UNIT} && echo active || echo inactive`
      const [encoded = '', lastRun = '', state = ''] = (
        await must(session, `sudo -n sh -c ${shellQuote(command)}`, 'following the bootstrap')
      ).split(`${separator}\n`)
      const chunk = Buffer.from(encoded.trim(), 'base64')
      offset += chunk.length
      // The log is read by byte offset: a character may be split between two reads.
      parser.push(decode(chunk))
      const result = parseLastRun(lastRun)
      const finished = result && (expected === undefined ? state.trim() !== 'active' : result.run_id === expected)
      if (finished && result) {
        if (result.exit_code !== 0) throw await bootstrapFailure(session, `install step ${failedStep(result.failed_step)} failed`)
        return {marker: await readMarker(session)}
      }

      if (state.trim() !== 'active' && ++inactivePolls > 3)
        throw await bootstrapFailure(session, 'the bootstrap stopped without reporting a result')
      return undefined
    },
    // The run's signal and deadline bound it.
    {deadline: Number.POSITIVE_INFINITY, delayMs: BACKOFF.bootstrapLook, signal},
  )
  // Without a deadline, only a value (or an error) ends the wait.
  return done as {marker: Marker}
}

/** The step a failed run names, as a person reads it: "gpu-test (B8)"; "?" when it names none. */
function failedStep(id: string | null): string {
  if (id === null) return '?'
  const substep = substepOf(id)
  return substep ? `${substep.name} (${id})` : id
}

function parseLastRun(text: string) {
  try {
    const parsed = LastRunSchema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

async function bootstrapFailure(session: SshSession, what: string): Promise<TargonError> {
  const tail = (await session.exec(`sudo -n tail -n 40 ${LOG}`, {maxBytes: CHECK_OUTPUT_BYTES})).stdout
    .split('\n')
    .filter((line) => line && !line.startsWith('TARGON_STEP'))
  return new TargonError('BOOTSTRAP_FAILED', `${what}${tail.length > 0 ? `: ${tail.at(-1)}` : ''}`, {
    details: {log_tail: tail},
    hint: `the full log is ${LOG} on the VM (targon ssh <vm> -- sudo tail -n 100 ${LOG})`,
  })
}

/** The VM's bootstrap marker (empty when there is none). */
export async function readMarker(session: SshSession): Promise<Marker> {
  return parseMarker((await session.exec(`cat ${MARKER}`, {maxBytes: CHECK_OUTPUT_BYTES})).stdout)
}

/** Whether a marker says the install ran to its end (B10 writes it with the script's version). */
export function markerSaysBootstrapped(marker: Marker): boolean {
  return Boolean(marker.script_version)
}

/** The marker a VM printed; anything that is not one (the VM's bytes are untrusted) is an empty marker. */
export function parseMarker(text: string): Marker {
  try {
    return MarkerSchema.parse(JSON.parse(text))
  } catch {
    return {}
  }
}

/** Shim phase: S0-S9 (unless runInstall already ran them, `done`), then the health check through a forwarded channel. */
export async function runShim(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
  done?: ShimRun,
): Promise<{version: string}> {
  for (const event of done?.events ?? []) onEvent(event)
  const result = done?.result ?? (await execShim(session, params, onEvent, signal))
  if (result.code !== 0) {
    const lines = `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => line && !line.startsWith('TARGON_STEP'))
    throw new TargonError('BOOTSTRAP_FAILED', `shim-start failed${lines.length > 0 ? `: ${lines.at(-1)}` : ''}`, {
      details: {log_tail: lines.slice(-40)},
      hint: 'run targon up --name <vm> again',
    })
  }

  onEvent({at: Date.now(), detail: '', event: 'start', id: 'S7'})
  const version = await waitHealthy(session, params.dstackVersion, params.shimHealthTimeoutMs, signal)
  onEvent({at: Date.now(), detail: version, event: 'ok', id: 'S7'})
  return {version}
}

function execShim(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
): Promise<ExecResult> {
  const parser = new StepParser(onEvent)
  const env = envAssignments(params, 'shim', params.runId ?? randomBytes(6).toString('hex'))
  return session.exec(`sudo -n env ${env.join(' ')} /bin/bash ${SCRIPT_PATH}`, {
    maxBytes: PHASE_OUTPUT_BYTES,
    onStdout: (text) => parser.push(text),
    signal,
  })
}

const HealthSchema = z.object({service: z.string(), version: z.string()})

async function waitHealthy(session: SshSession, wanted: string, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  let last = ''
  const version = await poll(
    async () => {
      try {
        const {body, status} = await session.httpGet(SHIM_PORT, '/api/healthcheck')
        const health = HealthSchema.safeParse(JSON.parse(body || 'null'))
        if (
          status === 200 &&
          health.success &&
          health.data.service === 'dstack-shim' &&
          (wanted === 'latest' || health.data.version === wanted)
        )
          return health.data.version
        last = status === 200 && health.success ? `version ${health.data.version}, wanted ${wanted}` : `HTTP ${status}`
      } catch (error) {
        last = (error as Error).message
      }

      return undefined
    },
    {deadline: Date.now() + timeoutMs, delayMs: BACKOFF.shimHealthLook, signal},
  )
  if (version !== undefined) return version
  const log = (await session.exec('sudo -n tail -n 20 /root/.dstack/shim.log', {maxBytes: CHECK_OUTPUT_BYTES})).stdout
    .split('\n')
    .filter(Boolean)
  throw new TargonError(
    'BOOTSTRAP_FAILED',
    `dstack-shim is not healthy on 127.0.0.1:${SHIM_PORT} after ${Math.round(timeoutMs / 1000)} s (${last})`,
    {
      details: {log_tail: log},
      hint: 'see /root/.dstack/shim.log on the VM (targon ssh <vm> -- sudo tail /root/.dstack/shim.log)',
    },
  )
}

const SAMPLER_PATH = '/usr/local/lib/targon-fleet/idle-sampler.py'

/**
 * Brings the idle sampler of a VM bootstrapped by an earlier version up to this one's (as the bootstrap's step B11
 * would on --reinstall), so that what this version counts as activity (a running job) keeps its VM. Nothing on a VM
 * without a sampler (never bootstrapped: it has no idle clock to keep).
 */
export async function updateIdleSampler(session: SshSession): Promise<'absent' | 'current' | 'updated'> {
  const script = [
    `f=${SAMPLER_PATH}`,
    '[ -f "$f" ] || { echo absent; exit 0; }',
    'cat >"$f.new"',
    'if cmp -s "$f.new" "$f"; then rm -f "$f.new"; echo current; exit 0; fi',
    'chmod 0755 "$f.new" && mv -f "$f.new" "$f" && systemctl restart targon-fleet-idle && echo updated',
  ].join('\n')
  const answer = await must(session, `sudo -n sh -c ${shellQuote(script)}`, 'updating the idle sampler', `${IDLE_SAMPLER.trimEnd()}\n`)
  const state = answer.trim()
  return state === 'absent' || state === 'current' ? state : 'updated'
}
