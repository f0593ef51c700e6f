/**
 * targon down's request, from its flags, its VM names and the owner setting: which VMs it selects and how it deletes
 * them, or the usage error (exit 2) of a selection that says nothing or contradicts itself. Pure: no I/O, no clock.
 */
import {validateFleet} from '../../adapters/settings/table.js'
import {usageError} from '../../core/errors.js'
import type {DownRequest} from '../../workflows/down-request/request.js'
import {isBulk} from '../../workflows/down/selection.js'

/** The flags down parses, as oclif gives them (durations in ms, amounts in USD). */
export interface DownFlags {
  all: boolean
  'any-origin': boolean
  'any-owner': boolean
  'dry-run': boolean
  expired: boolean
  fleet?: string
  force: boolean
  hooks: boolean
  'hook-timeout'?: number
  idle: boolean
  'idle-limit'?: number
  'ignore-missing': boolean
  'jobs-done': boolean
  'older-than'?: number
  'over-cost'?: number
  parallel: number
  'wake-registered': boolean
  yes: boolean
}

/** The settings the request depends on, already resolved. */
export interface DownSettings {
  /** The owner whose VMs bulk selectors take (config owner, TARGON_OWNER); null: none set. */
  owner: string | null
}

export function downRequest(flags: DownFlags, targets: string[], settings: DownSettings): DownRequest {
  const olderThan = flags['older-than'] === undefined ? null : flags['older-than'] / 1000
  const fleet = flags.fleet === undefined ? null : validateFleet(flags.fleet)
  const overCost = flags['over-cost'] ?? null
  const selection = {
    all: flags.all,
    any_origin: flags['any-origin'],
    any_owner: flags['any-owner'],
    owner: settings.owner,
    expired: flags.expired,
    fleet,
    older_than_seconds: olderThan,
    over_cost_usd: overCost,
    idle: flags.idle,
    idle_limit_seconds: flags['idle-limit'] === undefined ? null : flags['idle-limit'] / 1000,
    jobs_done: flags['jobs-done'],
    targets,
  }
  if (flags['idle-limit'] !== undefined && !flags.idle) throw usageError('--idle-limit needs --idle', 'add --idle')
  if (flags['hook-timeout'] !== undefined && !flags.hooks)
    throw usageError('--hook-timeout limits the hooks that --no-hooks skips', 'drop one of them')
  if (flags['jobs-done'] && flags.idle) throw usageError('--jobs-done and --idle select differently', 'run them one after the other')
  if (targets.length > 0 && (flags.all || flags.expired || flags.idle || flags['jobs-done'] || olderThan !== null || overCost !== null)) {
    throw usageError(
      'VM names cannot be combined with --all, --expired, --idle, --jobs-done, --older-than or --over-cost',
      'name the VMs alone, or drop the names to select by those flags',
    )
  }

  if (targets.length === 0 && !isBulk(selection)) {
    throw usageError(
      'nothing selected',
      'name VMs, or pass --all, --fleet F, --older-than DUR, --over-cost USD, --expired, --idle or --jobs-done',
    )
  }

  return {
    dryRun: flags['dry-run'],
    force: flags.force,
    hooks: flags.hooks,
    ...(flags['hook-timeout'] !== undefined && {hookTimeoutS: Math.ceil(flags['hook-timeout'] / 1000)}),
    ignoreMissing: flags['ignore-missing'],
    parallel: flags.parallel,
    selection,
    wakeRegistered: flags['wake-registered'],
    yes: flags.yes,
  }
}
