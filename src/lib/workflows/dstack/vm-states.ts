/**
 * What status says of each VM in dstack: held by a targon-* dstack fleet (in-fleet), held and running a dstack job
 * (busy), held by none (not-in-fleet), or unknown when dstack could not be read. One listing of dstack's fleets per
 * run, bounded in time; a dstack that fails is a warning, never a failure of status.
 */
import {isBusy} from '../../adapters/dstack/schemas.js'
import {asTargonError} from '../../core/errors.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import type {RunContext} from '../run-context.js'
import {heldHosts} from './hosts.js'
import {openDstack} from './open.js'

export const DSTACK_STATES = ['in-fleet', 'not-in-fleet', 'busy', 'unknown'] as const
export type DstackState = (typeof DSTACK_STATES)[number]

/** The longest status waits for dstack's answer (or http-timeout, when shorter). */
const STATUS_READ_MS = 10_000

/** Each VM's dstack state by uid; null when no dstack server is configured. */
export async function dstackStates(
  run: Pick<RunContext, 'clock' | 'settings' | 'signal' | 'warn'>,
  vms: KnownVm[],
  trace?: (line: string) => void,
): Promise<Map<string, DstackState> | null> {
  const all = (state: DstackState) => new Map(vms.map((vm) => [vm.uid, state]))
  let dstack
  try {
    dstack = await openDstack(run, {maxRequestMs: async () => STATUS_READ_MS, signal: run.signal, trace})
  } catch (error) {
    run.warn(`dstack state unknown: ${asTargonError(error).message}`)
    return all('unknown')
  }

  if (dstack === null) return null
  try {
    const held = heldHosts(await dstack.client.listFleets(), vms, dstack.settings.hostPattern)
    const states = all('not-in-fleet')
    for (const each of held) if (states.get(each.vm.uid) !== 'busy') states.set(each.vm.uid, isBusy(each.instance) ? 'busy' : 'in-fleet')
    return states
  } catch (error) {
    run.warn(`dstack state unknown: dstack's fleets could not be read (${asTargonError(error).message})`)
    return all('unknown')
  } finally {
    await dstack.client.close()
  }
}
