/** The public entry of the logs workflows: what commands may use of them (lint holds commands to it). */
export {FOLLOW_INTERVAL_MS, runLogs} from './logs.js'
export type {LogsResult} from './schema.js'
