/**
 * Warnings before a limit fires (sweep --warn): which VMs reach a limit within the window, and which of those were
 * already warned about. A TTL or a budget warns once per VM and deadline (a deadline moved by targon extend may warn
 * again); an idle deadline exists only while the VM is idle (idle since + limit), and warns at most once per idle
 * stretch. What was sent is kept in the config directory, next to the record of the guard's passes.
 */
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import * as z from 'zod'

import type {SweepResult} from './schema.js'
import {createdAt} from '../../domain/fleet/estimates.js'
import {type KnownVm, vmPrice} from '../../domain/fleet/fleet-read.js'
import {laterCommand, shellWord} from '../later-command.js'
import {readOwnFile} from '../../adapters/state/trust.js'
import {limitsOf} from '../../domain/fleet/limits.js'

export type Warning = SweepResult['warned'][number]

/** Where the sweep ran, so that the extend command of a warning acts on the same records when pasted in a shell. */
export interface SweepPlace {
  configDir: string
  profile: string
  /** The owner the sweep ran as (config key owner, TARGON_OWNER); null: none. */
  owner: string | null
}

/** How far a warning's extend command postpones a limit at least: an hour, or the warning window when longer. */
const MIN_POSTPONE_MS = 3_600_000

/**
 * The budget that postpones a budget deadline by `postponeMs`: what the VM costs in that time on top, rounded up to
 * cents (--by moves only the TTL and the idle hold, so a budget is postponed by raising it).
 */
export function raisedBudget(budget: number, pricePerHour: number, postponeMs: number): number {
  // The epsilon keeps a sum that is a whole number of cents in binary rounding (10.5 as 10.500000001) from a cent more.
  return Math.ceil((budget + (pricePerHour * postponeMs) / 3_600_000) * 100 - 1e-6) / 100
}

/**
 * The `targon extend` command that postpones a VM's limit by `postponeMs`, to paste in a shell: with
 * TARGON_CONFIG_DIR and --profile when the sweep's are not the defaults, and --any-owner when extend would otherwise
 * refuse the VM (another owner's, or one whose owner could not be read). A TTL or idle limit moves by --by (whole
 * minutes); a budget rises by what the VM costs in that time (--max-cost). Every word from outside is shell-quoted;
 * nothing secret is in it.
 */
export function extendCommand(vm: KnownVm, limit: Warning['limit'], place: SweepPlace, postponeMs = MIN_POSTPONE_MS): string {
  // An untrusted name that would read as a flag is named by its uid.
  const target = vm.name === null || vm.name.startsWith('-') ? vm.uid : vm.name
  const budget = limitsOf(vm).max_cost_usd
  const price = vmPrice(vm)
  const postpone =
    limit === 'max-cost' && budget !== null && price !== null
      ? `--max-cost ${raisedBudget(budget, price, postponeMs)}`
      : `--by ${byWords(postponeMs)}`
  return laterCommand(
    ['extend', shellWord(target), postpone, ...(limit === 'idle' ? ['--idle-only'] : limit === 'ttl' ? ['--ttl-only'] : [])],
    {configDir: place.configDir, profile: place.profile},
    vm.owner === null || vm.owner === place.owner ? [] : ['--any-owner'],
  )
}

/** A duration as --by reads it, in whole hours when it is some, else in minutes (rounded up). */
function byWords(ms: number): string {
  const minutes = Math.ceil(ms / 60_000)
  return minutes % 60 === 0 ? `${minutes / 60}h` : `${minutes}m`
}

/** Two idle-since readings this close apart are one stretch: they move with the sampling, not with activity. */
const SAME_STRETCH_MS = 2 * 60_000

/** The limits of `vms` that fire within `windowMs` of `now`; `idle` gives each idle VM's idle seconds and limit. */
export function dueWarnings(
  vms: KnownVm[],
  idle: Map<string, {idleSeconds: number; limitS: number}>,
  now: number,
  windowMs: number,
  place: SweepPlace,
): Warning[] {
  const due: Warning[] = []
  const warn = (vm: KnownVm, limit: Warning['limit'], firesAt: number, since: number | null) => {
    if (firesAt <= now || firesAt > now + windowMs) return
    due.push({
      extend_command: extendCommand(vm, limit, place, Math.max(windowMs, MIN_POSTPONE_MS)),
      fires_at: new Date(firesAt).toISOString(),
      idle_since: since === null ? null : new Date(since).toISOString(),
      limit,
      name: vm.name,
      owner: vm.owner ?? null,
      price_per_hour: vmPrice(vm),
      uid: vm.uid,
    })
  }

  for (const vm of vms) {
    const limits = limitsOf(vm)
    const ttl = Date.parse(limits.ttl_expires_at ?? '')
    if (!Number.isNaN(ttl)) warn(vm, 'ttl', ttl, null)
    const budget = limits.max_cost_usd
    const price = vmPrice(vm)
    const created = createdAt(vm)
    if (budget !== null && price !== null && price > 0 && created !== null)
      warn(vm, 'max-cost', Math.round(created + (budget / price) * 3_600_000), null)
    const idleNow = idle.get(vm.uid)
    if (idleNow) {
      const since = now - idleNow.idleSeconds * 1000
      warn(vm, 'idle', since + idleNow.limitS * 1000, since)
    }
  }

  return due
}

const SentSchema = z.record(
  z.string(),
  z.object({ttl: z.string().optional(), 'max-cost': z.string().optional(), idle: z.string().optional()}),
)
type Sent = z.infer<typeof SentSchema>

function sentFile(dir: string, profile: string): string {
  return join(dir, 'guard', `${profile}.warned.json`)
}

/**
 * The warnings of `due` not sent before; `remember` records those of them that were `sent` (delivered: one that failed
 * is sent again next time), and forgets VMs no longer listed.
 */
export function unsent(
  dir: string,
  profile: string,
  org: string,
  due: Warning[],
): {fresh: Warning[]; remember: (listed: Set<string>, sent: Warning[]) => void} {
  let sent: Sent = {}
  try {
    const parsed = SentSchema.safeParse(JSON.parse(readOwnFile(sentFile(dir, profile))))
    if (parsed.success) sent = parsed.data
  } catch {
    // None sent yet, or unreadable: at worst a warning is sent again.
  }

  const key = (uid: string) => `${org}/${uid}`
  const fresh = due.filter((warning) => {
    const before = sent[key(warning.uid)]?.[warning.limit]
    if (before === undefined) return true
    if (warning.limit !== 'idle') return before !== warning.fires_at
    return Math.abs(Date.parse(before) - Date.parse(warning.idle_since ?? '')) >= SAME_STRETCH_MS
  })
  return {
    fresh,
    remember(listed, delivered) {
      const next: Sent = Object.fromEntries(
        Object.entries(sent).filter(([each]) => !each.startsWith(`${org}/`) || listed.has(each.slice(org.length + 1))),
      )
      for (const warning of delivered)
        next[key(warning.uid)] = {
          ...next[key(warning.uid)],
          [warning.limit]: warning.limit === 'idle' ? warning.idle_since : warning.fires_at,
        }
      mkdirSync(join(dir, 'guard'), {mode: 0o700, recursive: true})
      writeFileSync(sentFile(dir, profile), JSON.stringify(next), {mode: 0o600})
    },
  }
}
