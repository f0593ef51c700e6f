/** What one sweep is asked to do, as its command reads it (cli/requests/sweep.ts) and its guarded pass runs it. */
import type {OwnerScope} from '../../domain/fleet/owners.js'

/** The flags of a sweep, with the settings they fall back on already applied. */
export interface SweepRequest {
  dryRun: boolean
  /** Only this fleet; null: every fleet. */
  fleet: string | null
  owners: OwnerScope
  /** As the org's team guard: every owner's VMs, each by the limits it carries. */
  team: boolean
  /** The TTL of a VM whose limits are unknown (team guard only); null: such VMs are left alone. */
  defaultTtlMs: number | null
  overCostUsd: number | null
  /** The idle limit of VMs without one of their own; null: none. */
  idleLimitMs: number | null
  minRunwayMs: number | null
  /** Warn of limits that fire within this window; null: off. */
  warnWindowMs: number | null
  hooks: boolean
  parallel: number
}
