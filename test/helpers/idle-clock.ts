/** What tests of idle VMs wait for on a simulated VM's idle clock, read from its file so that no SSH session is opened. */
import {setTimeout as sleep} from 'node:timers/promises'

import type {VmFarm} from '../vm/farm.js'

/** What the sampler last wrote: when it sampled, when it last saw activity, and what it saw (empty: nothing). */
export interface IdleClock {
  sampled_at: number
  last_active_at: number
  busy: string[]
}

/** Waits for a sample of the VM's idle sampler taken after now of which `holds` is true, within 30 s. */
export async function sampleWhere(farm: VmFarm, uid: string, holds: (clock: IdleClock) => boolean): Promise<IdleClock> {
  const after = Date.now() / 1000
  const deadline = Date.now() + 30_000
  for (;;) {
    const clock = JSON.parse(farm.vm(uid).readFile('/var/lib/targon-fleet/idle.json') || '{}')
    if (clock.sampled_at > after && Array.isArray(clock.busy) && holds(clock)) return clock
    if (Date.now() > deadline) throw new Error(`no such sample on ${uid} in 30 s: ${JSON.stringify(clock)}`)
    await sleep(250)
  }
}

/**
 * Waits for a sample of the VM's idle sampler taken after now that saw no activity: SSH sessions that just ended
 * (a probe's, an extend's) count as activity until the sampler has looked again.
 */
export async function cleanSample(farm: VmFarm, uid: string): Promise<void> {
  await sampleWhere(farm, uid, (clock) => clock.busy.length === 0)
}

/** Waits until the VM's idle clock says idle for longer than `seconds` (after the sessions that just ended). */
export async function idlePast(farm: VmFarm, uid: string, seconds: number): Promise<void> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const clock = JSON.parse(farm.vm(uid).readFile('/var/lib/targon-fleet/idle.json') || '{}')
    if (Array.isArray(clock.busy) && clock.busy.length === 0 && clock.sampled_at - clock.last_active_at > seconds) return
    if (Date.now() > deadline) throw new Error(`${uid} not idle past ${seconds} s in 30 s: ${JSON.stringify(clock)}`)
    await sleep(250)
  }
}
