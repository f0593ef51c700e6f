/** The public entry of the status workflows: what commands may use of them (lint holds commands to it). */
export type {StatusResult} from './schema.js'
export {runStatus} from './status.js'
