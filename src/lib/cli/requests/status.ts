/**
 * `targon status` as a request: from its flags, the VMs it names and the settings it goes by (already read) to what
 * the status workflow is asked and how its result is shown. Pure.
 */
import {type FleetSelection, type SelectionFlags, type SelectionSettings, selectionOf} from '../fleet-command.js'
import type {StatusOptions} from '../../workflows/status/status.js'

export interface StatusFlags extends SelectionFlags {
  fleet?: string
  'any-owner': boolean
  'any-origin': boolean
  'dstack-fleet': boolean
  quiet: boolean
  'show-deleted': boolean
  usage: boolean
}

export interface StatusSettings extends SelectionSettings {
  /** The configured idle-limit in ms (the guard's sweeps apply it); null when none is set. */
  idleLimitMs: number | null
}

/** How the result is shown in text mode. */
export interface StatusView {
  /** -q: uids only. */
  quiet: boolean
  /** Records of unknown billing in the table too, not only in the sums. */
  showDeleted: boolean
  /** The columns of --usage. */
  usage: boolean
}

export interface StatusRequest {
  /** The VMs named, the fleet and the owner rules. */
  selection: FleetSelection
  /** What the workflow is asked; the org comes once connected. */
  status: Omit<StatusOptions, 'org'>
  view: StatusView
}

export function statusRequest(flags: StatusFlags, named: readonly string[], settings: StatusSettings): StatusRequest {
  const selection = selectionOf(flags, settings, named)
  // Only --fleet narrows the table; a dstack fleet file is of one fleet, the configured one without it.
  const narrowed = selection.fleetGiven !== null || flags['dstack-fleet']
  return {
    selection,
    status: {
      anyOrigin: flags['any-origin'],
      configuredFleet: selection.fleet,
      dstackFleet: flags['dstack-fleet'],
      fleet: narrowed && selection.targets.length === 0 ? selection.fleet : null,
      idleLimitS: settings.idleLimitMs === null ? null : settings.idleLimitMs / 1000,
      owners: selection.owners,
      showDeleted: flags['show-deleted'],
      targets: selection.targets,
      usage: flags.usage,
    },
    view: {quiet: flags.quiet, showDeleted: flags['show-deleted'], usage: flags.usage},
  }
}
