/**
 * Ownership and naming. Targon workloads have no labels, so every workload this tool
 * creates is named `tcli-<fleet>-<label>`: status and down find them from the API alone.
 */
import {randomBytes} from 'node:crypto'

import {usageError} from '../../core/errors.js'
import {validateFleet} from '../../adapters/settings/table.js'
import {WORKLOAD_NAME_PATTERN} from '../../adapters/targon/schemas.js'

export const NAME_PREFIX = 'tcli-'
const MAX_NAME = 32
const TARGON_NAME = WORKLOAD_NAME_PATTERN
const OWNED_NAME = /^tcli-([a-z0-9]{1,12})-([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$/

/** A random label: 8 base36 characters. */
export function randomLabel(): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyz'
  return [...randomBytes(8)].map((byte) => alphabet[byte % 36]).join('')
}

/**
 * The workload name for a fleet and label. `--name` may be a bare label (`train1`) or the
 * full name (`tcli-default-train1`).
 */
export function workloadName(fleet: string, label?: string): string {
  validateFleet(fleet)
  const prefix = `${NAME_PREFIX}${fleet}-`
  if (label === undefined) return prefix + randomLabel()
  const name = label.startsWith(prefix) ? label : prefix + label
  // Also a name that status and down recognise as this fleet's: "-x" would make "tcli-default--x", a valid
  // Targon name that no longer parses as fleet plus label, so the VM would be invisible to down --all.
  if (name.length > MAX_NAME || !TARGON_NAME.test(name) || fleetOf(name) !== fleet) {
    const room = MAX_NAME - prefix.length
    throw usageError(
      `name "${label}" is not valid for fleet ${fleet}`,
      `use at most ${room} lowercase letters, digits or inner hyphens, e.g. --name train1`,
    )
  }

  return name
}

/** The fleet a workload belongs to, or undefined when this tool did not create it. */
export function fleetOf(name: string | null | undefined): string | undefined {
  return name && TARGON_NAME.test(name) ? OWNED_NAME.exec(name)?.[1] : undefined
}

/*
 * What a writer may call a VM. The API boundary already dropped names that break Targon's rule (schemas.ts); these
 * are the writers' own checks, so that no later path around the boundary puts an API value in a file or a config.
 */

/** A per-VM folder (cp --fleet): only one of this tool's names (`tcli-<fleet>-<label>`), else the uid. */
export function folderName(vm: {name: string | null; uid: string}): string {
  return isOwned(vm.name) ? (vm.name as string) : vm.uid
}

export function isOwned(name: string | null | undefined): boolean {
  return fleetOf(name) !== undefined
}
