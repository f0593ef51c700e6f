/** The public entry of the sweep workflows: what commands may use of them (lint holds commands to it). */
export type {SweepResult} from './schema.js'
