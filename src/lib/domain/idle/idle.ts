/**
 * Idle VMs: the clock that each bootstrapped VM keeps (the sampler the bootstrap installs, idle-sampler.py), read
 * over the VM's pinned SSH connection, and the judgement of whether a VM is idle past its limit.
 *
 * Fail safe: a VM is idle only when its clock was read, is fresh, is consistent with the VM's own clock, and says
 * idle, and when a live sample taken by the same probe finds nothing busy either. Every figure comes from the VM's
 * own clock, never this machine's, so that a skewed clock cannot make a VM look idle. Whatever cannot be read is
 * `unreadable`, with the reason, and is never deleted for idleness.
 */
import * as z from 'zod'

import type {Usage} from './schema.js'
import {mapBounded} from '../../core/concurrency.js'
import {asTargonError} from '../../core/errors.js'
import type {Clock} from '../../core/clock.js'
import type {VmSessions} from '../fleet/vm-sessions.js'
import {limitsOf, readLimitsOf} from '../fleet/limits.js'
import type {KnownVm} from '../fleet/fleet-read.js'
import {type SshSession, shellQuote} from '../../adapters/ssh/session.js'

/** The probe's fixed remote command: the sampler recognises a session running it as targon's own, not as activity. */
export const PROBE_COMMAND = 'python3 /usr/local/lib/targon-fleet/idle-sampler.py --probe'
/** How long a probe may take on one VM, its connection not included. */
const PROBE_TIMEOUT_MS = 30_000
/** What a probe may print; more is not a probe's answer. */
const MAX_PROBE_BYTES = 64 * 1024
/** How much older than the sampler's interval the last sample may be before the clock counts as stopped. */
const STALE_SLACK_S = 30
/** The clock file may run this far ahead of the VM's clock (rounding), no more. */
const AHEAD_SLACK_S = 5

const GpuSchema = z.object({index: z.number(), util_pct: z.number(), mem_used_mib: z.number(), mem_total_mib: z.number()})
const TaskSchema = z.object({id: z.string().max(128), status: z.string().max(32)})
const Reasons = z.array(z.string().max(200)).max(64)

const ClockSchema = z.object({
  version: z.string().max(16),
  interval_s: z.number().positive(),
  threshold_pct: z.number(),
  limit_s: z.number().positive().nullable(),
  sampled_at: z.number(),
  last_active_at: z.number(),
  busy: Reasons,
  gpus: z.array(GpuSchema).max(64).nullable(),
  sessions: z.number().int().nonnegative(),
  tunnels: z.number().int().nonnegative(),
  tasks: z.array(TaskSchema).max(64).nullable(),
  containers: z.array(z.string().max(200)).max(64).nullable(),
})

const ProbeSchema = z.object({
  /** The sampler's version on the VM (idle-sampler.py's VERSION). */
  version: z.string().max(16).optional(),
  now: z.number(),
  sampler_active: z.boolean(),
  /** targon extend --by, on the VM: no idle deletion before this time (the VM's clock); absent from older samplers. */
  hold_until: z.number().nullable().optional(),
  clock: ClockSchema.nullable(),
  live: z.object({
    busy: Reasons,
    gpus: z.array(GpuSchema).max(64).nullable(),
    sessions: z.array(z.object({kind: z.string().max(16)})).max(256),
    tasks: z.array(TaskSchema).max(64).nullable(),
    containers: z.array(z.string().max(200)).max(64).nullable(),
  }),
})
export type Probe = z.infer<typeof ProbeSchema>

export type IdleState = Usage['state']

/**
 * The first sampler version that reads the task list of dstack-shim 0.19.26 and later ({"tasks": [...]}). An older one
 * sees none of a current shim's tasks, so its "idle" says nothing of a dstack job pulling an image or waiting for data.
 */
const SAMPLER_SEES_DSTACK_TASKS = 4

/** The oldest sampler version behind a probe: its own, and the one that wrote the clock. */
function samplerVersion(probe: Probe): number {
  const versions = [probe.version, probe.clock?.version].filter((version) => version !== undefined).map(Number)
  return versions.length === 0 ? 0 : Math.min(...versions.map((version) => (Number.isFinite(version) ? version : 0)))
}

/**
 * A VM's idle limits as the caller knows them: its own (up --idle: the local record, or the file it carries; see
 * fleet/limits.ts), and the configured one (--idle-limit) for VMs without their own.
 */
export interface IdleLimits {
  ownS: number | null
  fallbackS: number | null
}

/**
 * The idle limit a VM is judged by: the stricter of its own (as known here) and the one its sampler keeps, since the
 * VM may tighten a limit but never loosen one; the configured one only when neither has one.
 */
function idleLimit(limits: IdleLimits, sampler: number | null | undefined): number | null {
  const own = [limits.ownS, sampler ?? null].filter((limit): limit is number => limit !== null)
  return own.length > 0 ? Math.min(...own) : limits.fallbackS
}

/** What a probe's answer says of a VM under its idle limits; `now` is this machine's. */
export function judgeIdle(probe: Probe, limits: IdleLimits, now: number): Usage {
  const {clock, live} = probe
  const seen = {
    // The probe runs as ubuntu, who may not see Docker: the sampler's own view then.
    containers: live.containers ?? clock?.containers ?? null,
    dstack_tasks: live.tasks,
    gpus: live.gpus,
    ssh_sessions: live.sessions.filter((session) => session.kind !== 'tunnel').length,
    tunnels: live.sessions.filter((session) => session.kind === 'tunnel').length,
  }
  const unreadable = (reason: string) => unreadableUsage(reason, seen)
  const limit = idleLimit(limits, clock?.limit_s)
  // Busy now is busy, whatever the clock says or could not say.
  if (live.busy.length > 0)
    return {...seen, idle_limit_seconds: limit, idle_reason: `busy: ${live.busy.join(', ')}`, idle_seconds: 0, state: 'busy'}
  if (!clock) return unreadable('no idle clock on the VM (bootstrapped before it had one: targon up --name <vm> adds it)')
  const version = samplerVersion(probe)
  if (version < SAMPLER_SEES_DSTACK_TASKS)
    return unreadable(
      `the idle sampler on the VM is too old to see dstack tasks (version ${version || 'unknown'}): targon up --name <vm> updates it`,
    )
  if (!probe.sampler_active) return unreadable('the idle sampler is not running')
  const age = probe.now - clock.sampled_at
  if (age < -AHEAD_SLACK_S || clock.last_active_at > clock.sampled_at + AHEAD_SLACK_S)
    return unreadable("the idle clock is ahead of the VM's clock")
  if (age > 3 * clock.interval_s + STALE_SLACK_S) return unreadable(`the idle clock is stale (last sample ${Math.round(age)} s ago)`)
  if (clock.busy.length > 0)
    return {
      ...seen,
      idle_limit_seconds: limit,
      idle_reason: `busy at the last sample: ${clock.busy.join(', ')}`,
      idle_seconds: 0,
      state: 'busy',
    }
  // Up to the last sample only: what happened since is not known.
  const idle = Math.max(0, Math.floor(clock.sampled_at - clock.last_active_at))
  // A limit shorter than three samples would end a VM on one quiet sample: three samples at least.
  const floor = limit === null ? null : Math.max(limit, 3 * clock.interval_s)
  const over = floor !== null && idle > floor
  // How long the VM's own hold-off (targon extend) still runs, by the VM's clock; then "until" by this machine's.
  const heldS = (probe.hold_until ?? 0) - probe.now
  if (over && heldS > 0)
    return {
      ...seen,
      idle_hold_until: new Date(now + heldS * 1000).toISOString(),
      idle_limit_seconds: floor,
      idle_reason: `idle ${idle} s, over its limit of ${floor} s; idle deletion held off on the VM for ${Math.ceil(heldS)} s more (targon extend)`,
      idle_seconds: idle,
      state: 'idle',
    }
  return {
    ...seen,
    idle_limit_seconds: floor,
    idle_reason:
      floor === null
        ? `idle ${idle} s; no idle limit`
        : over
          ? `idle ${idle} s, over its limit of ${floor} s`
          : `idle ${idle} s, limit ${floor} s`,
    idle_seconds: idle,
    state: 'idle',
  }
}

/** Whether `usage` says the VM may be deleted for idleness. */
export function idlePastLimit(usage: Usage): boolean {
  return (
    usage.state === 'idle' &&
    !usage.idle_hold_until &&
    usage.idle_limit_seconds !== null &&
    (usage.idle_seconds ?? 0) > usage.idle_limit_seconds
  )
}

/**
 * The usage of each VM by uid, probed `parallel` at a time; each VM's own idle limit (up --idle: its record, or the
 * file it carries) comes before `limitS`, the configured one.
 */
export async function probeUsages(
  vms: KnownVm[],
  sessions: VmSessions,
  options: {
    configDir: string
    limitS: number | null
    parallel: number
    signal?: AbortSignal
    alsoRead?: AlsoRead
    clock: Clock
  },
): Promise<Map<string, Usage>> {
  const usages = await mapBounded(vms, options.parallel, async (vm) => {
    try {
      // The limits it carries, over the probe's connection, where no earlier read of the run took them.
      if (vm.onVm === undefined) await readLimitsOf(vm, sessions, options)
      return await probeUsage(vm, sessions, {
        alsoRead: options.alsoRead,
        clock: options.clock,
        limits: {fallbackS: options.limitS, ownS: limitsOf(vm).idle_limit_seconds},
        signal: options.signal,
      })
    } finally {
      sessions.release(vm)
    }
  })
  return new Map(vms.map((vm, index) => [vm.uid, usages[index] as Usage]))
}

/** How a kept VM's reason begins when it does not run (it has no idle clock to read). */
export const NOT_RUNNING = 'not running'

/** What nothing could be read of: a VM not running, or a probe that failed before it saw anything. */
const NOTHING_SEEN = {containers: null, dstack_tasks: null, gpus: null, ssh_sessions: null, tunnels: null}

function unreadableUsage(reason: string, seen: Pick<Usage, keyof typeof NOTHING_SEEN> = NOTHING_SEEN): Usage {
  return {...seen, idle_limit_seconds: null, idle_reason: reason, idle_seconds: null, state: 'unreadable'}
}

/** Reads a VM's clock and a live sample over its pinned SSH connection; whatever fails is `unreadable`, with why. */
/** More to read over a probe's connection once the probe is done (status: the bootstrap marker); its errors are its own. */
export type AlsoRead = (vm: KnownVm, session: SshSession) => Promise<void>

async function probeUsage(
  vm: KnownVm,
  sessions: VmSessions,
  options: {limits: IdleLimits; signal?: AbortSignal; alsoRead?: AlsoRead; clock: Clock},
): Promise<Usage> {
  const unreadable = (reason: string) => unreadableUsage(reason)
  if (vm.status !== 'running') return unreadable(`${NOT_RUNNING} (${vm.status})`)
  try {
    const session = await sessions.session(vm)
    // A VM that does not answer in time is unreadable, and the run goes on with the others.
    const within = AbortSignal.timeout(PROBE_TIMEOUT_MS)
    const answer = await session.exec(PROBE_COMMAND, {
      maxBytes: MAX_PROBE_BYTES,
      signal: options.signal ? AbortSignal.any([options.signal, within]) : within,
    })
    // Checked before the read is judged: a VM that prints without end is cut off at the limit, never buffered.
    if (answer.overflowed) return unreadable(`the probe printed more than ${MAX_PROBE_BYTES / 1024} KiB, more than a probe can`)
    // After the probe, so that its sample never sees this command as a session's activity.
    if (!answer.aborted) await options.alsoRead?.(vm, session).catch(() => undefined)
    if (answer.aborted) return unreadable(`the probe did not answer within ${PROBE_TIMEOUT_MS / 1000} s`)
    if (answer.code !== 0)
      return unreadable(`the probe failed on the VM (exit ${answer.code ?? answer.signal}); is the idle sampler installed?`)
    const parsed = ProbeSchema.safeParse(JSON.parse(answer.stdout))
    if (!parsed.success) return unreadable('the idle clock is not one (it fails the checks)')
    return judgeIdle(parsed.data, options.limits, options.clock.now())
  } catch (error) {
    return unreadable(error instanceof SyntaxError ? 'the probe did not answer JSON' : asTargonError(error).message)
  }
}

/**
 * Sets hold_until in the VM's idle.conf to the VM's own now (its clock offset included) + argv[2] seconds, unless it
 * already holds longer.
 */
const HOLD_SCRIPT = [
  'import json, sys, time',
  'path = sys.argv[1]',
  'try:',
  '    offset = float(open("/etc/targon-fleet/clock-offset").read().strip() or 0)',
  'except Exception:',
  '    offset = 0',
  'try:',
  '    current = json.load(open(path))',
  '    current = current if isinstance(current, dict) else {}',
  'except Exception:',
  '    current = {}',
  'try:',
  '    held = float(current.get("hold_until") or 0)',
  'except Exception:',
  '    held = 0',
  '# A hold already further out stays: an extension never brings the idle deletion closer.',
  'current["hold_until"] = max(held, time.time() + offset + int(sys.argv[2]))',
  'json.dump(current, open(path + ".new", "w"), sort_keys=True)',
].join('\n')

/**
 * targon extend --by on the VM, where its idle limit lives: the sampler's config holds off the idle deletion for
 * `seconds` from the VM's own now (a longer hold stays), so that every probe of the VM (from any directory) says so.
 * Null when written, else why not.
 */
export async function holdIdleOnVm(session: SshSession, seconds: number): Promise<string | null> {
  const script = [
    'set -eu',
    'conf=/etc/targon-fleet/idle.conf',
    '[ -e "$conf" ] || { echo "no idle sampler on the VM" >&2; exit 3; }',
    `python3 -c ${shellQuote(HOLD_SCRIPT)} "$conf" ${Math.round(seconds)}`,
    'chown root:targon-idle "$conf.new"',
    'chmod 0640 "$conf.new"',
    'mv -f "$conf.new" "$conf"',
  ].join('\n')
  const answer = await session.exec(`sudo -n sh -c ${shellQuote(script)}`, {
    maxBytes: 64 * 1024,
    signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
  })
  if (answer.code === 0) return null
  return answer.code === 3 ? 'no idle sampler on the VM' : `the write failed on the VM (exit ${answer.code ?? answer.signal ?? 'none'})`
}
