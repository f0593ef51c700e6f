/** What this machine keeps of a VM, dropped once the VM no longer bills: its local record and its host-key pin. */
import {removePin} from '../../adapters/ssh/pins.js'
import type {LocalState} from '../../adapters/state/local-state.js'

export function forgetVm(state: LocalState, org: string, uid: string): void {
  removePin(state.dir, uid)
  for (const record of state.listVms(org).records) if (record.uid === uid) state.removeVm(org, record.name)
}
