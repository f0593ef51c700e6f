/** The shim phase of bootstrap.sh (S0-S9), then the dstack shim's health through a forwarded channel. */
import {randomBytes} from 'node:crypto'
import * as z from 'zod'

import {BACKOFF} from '../../core/backoff.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {TargonError, usageError} from '../../core/errors.js'
import {oneLine} from '../../core/output.js'
import {poll} from '../../core/poll.js'
import type {ExecResult, SshSession} from '../ssh/session.js'
import {type BootstrapParams, PHASE_OUTPUT_BYTES, CHECK_OUTPUT_BYTES, SCRIPT_PATH, envAssignments} from './remote-call.js'
import {type StepEvent, StepParser} from './steps.js'

const SHIM_PORT = 10998

/** The shim phase's remote part, already run right after a check that found the VM bootstrapped. */
export interface ShimOutput {
  result: ExecResult
  events: StepEvent[]
}

/** The shim phase's exit when --force-shim meets a dstack task at work (bootstrap.sh, S0). */
const FORCE_REFUSED = 76

/** What S0 reports on a host that dstack owns: "dstack-managed: <the first sign of it>". */
const DSTACK_MANAGED = /^dstack-managed: (.*)$/

export interface ShimState {
  /** The version the healthy shim runs. */
  version: string
  /** Why dstack owns the host's shim, which was left as it is; null: targon manages it. */
  dstackManaged: string | null
}

/**
 * Shim phase: S0-S9 (unless runInstall already ran them, `done`), then the health check through a forwarded channel.
 * On a host that dstack owns (S0) the shim is dstack's, whatever version it runs.
 */
export async function runShim(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
  done?: ShimOutput,
  clock: Clock = REAL_CLOCK,
): Promise<ShimState> {
  let dstackManaged: string | null = null
  const seen = (event: StepEvent) => {
    const managed = event.id === 'S0' && event.event === 'ok' ? DSTACK_MANAGED.exec(event.detail) : null
    // The VM's words: one printable line, bounded.
    if (managed) dstackManaged = oneLine(managed[1] ?? '').slice(0, 300)
    onEvent(event)
  }

  for (const event of done?.events ?? []) seen(event)
  const result = done?.result ?? (await execShim(session, params, seen, signal))
  if (result.code === FORCE_REFUSED) {
    const why = `${result.stdout}\n${result.stderr}`.split('\n').findLast((line) => line.startsWith('--force-shim would'))
    throw usageError(
      oneLine(why ?? "--force-shim would restart dstack's shim under its tasks at work").slice(0, 400),
      'run it again once the tasks have ended, or without --force-shim',
    )
  }

  if (result.code !== 0) {
    const lines = `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => line && !line.startsWith('TARGON_STEP'))
    throw new TargonError('BOOTSTRAP_FAILED', `shim-start failed${lines.length > 0 ? `: ${lines.at(-1)}` : ''}`, {
      details: {log_tail: lines.slice(-40)},
      hint: 'run targon up --name <vm> again',
    })
  }

  onEvent({at: clock.now(), detail: '', event: 'start', id: 'S7'})
  // dstack runs the shim of its server's version, and upgrades it: any version is dstack's to choose.
  const wanted = dstackManaged === null ? params.dstackVersion : 'latest'
  const version = await waitHealthy(session, wanted, params.shimHealthTimeoutMs, clock, signal)
  onEvent({at: clock.now(), detail: version, event: 'ok', id: 'S7'})
  return {dstackManaged, version}
}

function execShim(
  session: SshSession,
  params: BootstrapParams,
  onEvent: (event: StepEvent) => void,
  signal?: AbortSignal,
): Promise<ExecResult> {
  const parser = new StepParser(onEvent)
  const env = envAssignments(params, 'shim', params.executionId ?? randomBytes(6).toString('hex'))
  return session.exec(`sudo -n env ${env.join(' ')} /bin/bash ${SCRIPT_PATH}`, {
    maxBytes: PHASE_OUTPUT_BYTES,
    onStdout: (text) => parser.push(text),
    signal,
  })
}

/** GET /api/healthcheck's answer: HealthcheckResponse in dstack's runner/internal/shim/api/schemas.go (0.21.2). */
const HealthSchema = z.object({service: z.string().max(64), version: z.string().max(64)})

/**
 * What one answer of the shim's health check says: the version it runs when it is the shim and runs `wanted` (any
 * version for latest), else why not. The answer is the VM's, untrusted: checked, never echoed beyond its fields.
 */
export function readHealthAnswer(status: number, body: string, wanted: string): {version: string} | {why: string} {
  let parsed: unknown
  try {
    parsed = JSON.parse(body || 'null')
  } catch {
    return {why: `HTTP ${status}, not JSON`}
  }
  const health = HealthSchema.safeParse(parsed)
  if (status !== 200 || !health.success) return {why: `HTTP ${status}`}
  if (health.data.service !== 'dstack-shim') return {why: 'not dstack-shim answering'}
  const shown = /^[0-9A-Za-z.+-]{1,64}$/.test(health.data.version) ? health.data.version : '(not a version)'
  if (wanted !== 'latest' && health.data.version !== wanted) return {why: `version ${shown}, wanted ${wanted}`}
  if (shown !== health.data.version) return {why: 'version (not a version)'}
  return {version: health.data.version}
}

async function waitHealthy(session: SshSession, wanted: string, timeoutMs: number, clock: Clock, signal?: AbortSignal): Promise<string> {
  let last = ''
  const version = await poll(
    async () => {
      try {
        const {body, status} = await session.httpGet(SHIM_PORT, '/api/healthcheck')
        const health = readHealthAnswer(status, body, wanted)
        if ('version' in health) return health.version
        last = health.why
      } catch (error) {
        last = (error as Error).message
      }

      return undefined
    },
    {clock, deadline: clock.now() + timeoutMs, delayMs: BACKOFF.shimHealthLook, signal},
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
