/**
 * The limits a VM carries (/etc/targon-fleet/limits.json, root-owned, 0644, beside idle.conf): written at up, extend
 * and run --down from the local record, read by any directory that can reach the VM (status, sweep, down, extend), so
 * that a guard on another machine enforces them while the laptop that set them sleeps. Nothing secret is in it.
 *
 * What is read is the VM's word, untrusted: bounded, checked field by field, and a file that is missing, too large or
 * fails a check is no limits at all but an unknown (see domain/fleet/limits.ts, which lets it only tighten).
 */
import * as z from 'zod'

import {JOB_ID_PATTERN} from '../../core/input.js'
import {type SshSession, shellQuote} from '../ssh/session.js'
import {must} from './remote-call.js'

/** The idle sampler tells targon's reads and writes of it from a user's session by this path (its LIMITS_MARK). */
export const LIMITS_PATH = '/etc/targon-fleet/limits.json'
/** A limits file is a few hundred bytes; more is not one. */
const MAX_LIMITS_BYTES = 16 * 1024
/** What a read may take, its connection not included: a VM that hangs is unreachable, never waited for. */
const READ_TIMEOUT_MS = 15_000
/** Down jobs kept on the VM: the newest, at most. */
const MAX_DOWN_JOBS = 16

const Instant = z
  .string()
  .max(40)
  .refine((value) => !Number.isNaN(Date.parse(value)), 'not a time')

export const VmLimitsSchema = z.object({
  version: z.literal(1),
  ttl_expires_at: Instant.nullable().describe('up --ttl (moved by extend), absolute UTC'),
  max_cost_usd: z.number().nonnegative().max(1e7).nullable().describe('up --max-cost'),
  idle_limit_seconds: z.number().int().positive().max(1e9).nullable().describe('up --idle'),
  idle_hold_until: Instant.nullable().describe('extend: no idle deletion before then'),
  on_delete_hook: z.boolean().describe('up --on-delete stored a pre-delete hook on the VM'),
  owner: z.string().max(64).nullable().describe('who made it, as the directory that wrote the file knew it'),
  down_jobs: z.array(z.string().regex(JOB_ID_PATTERN)).max(MAX_DOWN_JOBS).describe('run --detach --down jobs: the VM goes once they end'),
  written_at: Instant,
})
export type VmLimits = z.infer<typeof VmLimitsSchema>

/** What reading a VM's limits gave: its limits, or why there are none to go by. */
export type VmLimitsRead = {state: 'read'; limits: VmLimits} | {state: 'missing' | 'malformed' | 'unreachable'; problem: string}

/** Replaces the VM's limits file (root-owned, world-readable: the sampler's user and ubuntu read it without sudo). */
export async function writeVmLimits(session: SshSession, limits: VmLimits): Promise<void> {
  const script = [
    'set -eu',
    'umask 022',
    `f=${LIMITS_PATH}`,
    'mkdir -p "$(dirname "$f")"',
    'cat >"$f.new"',
    'chown root:root "$f.new"',
    'chmod 0644 "$f.new"',
    'mv -f "$f.new" "$f"',
  ].join('\n')
  await must(
    session,
    `sudo -n sh -c ${shellQuote(script)}`,
    'writing the limits on the VM',
    `${JSON.stringify(VmLimitsSchema.parse(limits))}\n`,
  )
}

/** Reads the VM's limits over an open session; whatever is not a limits file says why. */
export async function readVmLimits(session: SshSession, signal?: AbortSignal): Promise<VmLimitsRead> {
  const within = AbortSignal.timeout(READ_TIMEOUT_MS)
  const answer = await session.exec(`f=${LIMITS_PATH}; [ -e "$f" ] || exit 3; exec cat -- "$f"`, {
    maxBytes: MAX_LIMITS_BYTES,
    signal: signal ? AbortSignal.any([signal, within]) : within,
  })
  if (answer.overflowed) return {problem: `its limits file is larger than ${MAX_LIMITS_BYTES / 1024} KiB`, state: 'malformed'}
  if (answer.aborted) return {problem: `reading its limits took more than ${READ_TIMEOUT_MS / 1000} s`, state: 'unreachable'}
  if (answer.code === 3)
    return {problem: 'it carries no limits file (made before limits travelled with VMs, or never bootstrapped)', state: 'missing'}
  if (answer.code !== 0) return {problem: `its limits file could not be read (exit ${answer.code ?? answer.signal})`, state: 'malformed'}
  let json: unknown
  try {
    json = JSON.parse(answer.stdout)
  } catch {
    return {problem: 'its limits file is not JSON', state: 'malformed'}
  }
  const parsed = VmLimitsSchema.safeParse(json)
  if (!parsed.success)
    return {problem: `its limits file fails the checks (${parsed.error.issues[0]?.path.join('.') || 'shape'})`, state: 'malformed'}
  return {limits: parsed.data, state: 'read'}
}
