/**
 * The request of `targon sweep`, from its flags and the settings they fall back on: no I/O, so that every rule of
 * its flags is tested by a table.
 */
import type {SweepRequest} from '../../workflows/sweep/request.js'
import {validateFleet} from '../../adapters/settings/table.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../../adapters/targon/http.js'
import {usageError} from '../../core/errors.js'

/** The guard's warning window when neither --warn nor the config sets one. */
export const DEFAULT_GUARD_WARN_MS = 15 * 60_000

/** --parallel's bound (and default): the API's on mutations in flight. */
export const MAX_PARALLEL = MAX_MUTATIONS_IN_FLIGHT

/** The flags of sweep that shape its request (durations in ms). */
export interface SweepFlags {
  'any-owner': boolean
  'default-ttl'?: number
  'dry-run': boolean
  fleet?: string
  guard: boolean
  hooks: boolean
  'idle-limit'?: number
  'min-runway'?: number
  'over-cost'?: number
  parallel: number
  team: boolean
  warn?: number
}

/** The settings a sweep falls back on, as resolved (config key or environment); undefined where none is set. */
export interface SweepSettings {
  owner?: string
  idleLimitMs?: number
  minRunwayMs?: number
  warnWindowMs?: number
}

/** The sweep the flags ask for; a usage error (exit 2) for a fleet name that is not one, or --default-ttl without --team. */
export function sweepRequest(flags: SweepFlags, settings: SweepSettings): SweepRequest {
  const fleet = flags.fleet === undefined ? null : validateFleet(flags.fleet)
  if (flags['default-ttl'] !== undefined && !flags.team)
    throw usageError('--default-ttl bounds the VMs a team guard cannot read', 'pass it with --team')
  return {
    defaultTtlMs: flags['default-ttl'] ?? null,
    dryRun: flags['dry-run'],
    fleet,
    hooks: flags.hooks,
    idleLimitMs: flags['idle-limit'] ?? settings.idleLimitMs ?? null,
    minRunwayMs: flags['min-runway'] ?? settings.minRunwayMs ?? null,
    overCostUsd: flags['over-cost'] ?? null,
    // The team guard enforces every owner's limits: each VM's own, never a selection of one owner.
    owners: flags.team ? {anyOwner: true, owner: null} : {anyOwner: flags['any-owner'], owner: settings.owner ?? null},
    parallel: flags.parallel,
    team: flags.team,
    warnWindowMs: flags.warn ?? settings.warnWindowMs ?? (flags.guard ? DEFAULT_GUARD_WARN_MS : null),
  }
}
