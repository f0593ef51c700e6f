/** What tests of idle VMs wait for on a simulated VM's idle clock, read from its file so that no SSH session is opened. */
import {setTimeout as sleep} from 'node:timers/promises'

import type {VmFarm} from '../vm/farm.js'

/** What the sampler last wrote: when it sampled, when it last saw activity, and what it saw (empty: nothing). */
export interface IdleClock {
  sampled_at: number
  last_active_at: number
  busy: string[]
}

/** Reads the VM's idle clock every 250 ms until `holds` is true of it, within 30 s; `what` names it in the failure. */
async function waitForClock(farm: VmFarm, uid: string, what: string, holds: (clock: IdleClock) => boolean): Promise<IdleClock> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const clock = JSON.parse(farm.vm(uid).readFile('/var/lib/targon-fleet/idle.json') || '{}')
    if (Array.isArray(clock.busy) && holds(clock)) return clock
    if (Date.now() > deadline) throw new Error(`${uid}: ${what} in 30 s: ${JSON.stringify(clock)}`)
    await sleep(250)
  }
}

/** Waits for a sample of the VM's idle sampler taken after now of which `holds` is true, within 30 s. */
export async function sampleWhere(farm: VmFarm, uid: string, holds: (clock: IdleClock) => boolean): Promise<IdleClock> {
  const after = Date.now() / 1000
  return waitForClock(farm, uid, 'no such sample', (clock) => clock.sampled_at > after && holds(clock))
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
  await waitForClock(
    farm,
    uid,
    `not idle past ${seconds} s`,
    (clock) => clock.busy.length === 0 && clock.sampled_at - clock.last_active_at > seconds,
  )
}
