/** The public entry of the dstack workflows: what commands may use of them (lint holds commands to it). */
export {validateFleet} from '../../adapters/settings/table.js'
export {openLeave} from './leave.js'
export {openDstack} from './open.js'
export type {DstackSyncResult} from './schema.js'
export {runDstackSync} from './sync.js'
