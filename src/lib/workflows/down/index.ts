/** The public entry of the down workflows: what commands may use of them (lint holds commands to it). */
export type {DownResult} from './schema.js'
