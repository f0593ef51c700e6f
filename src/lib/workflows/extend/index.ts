/** The public entry of the extend workflows: what commands may use of them (lint holds commands to it). */
export {runExtend} from './extend.js'
export type {ExtendResult} from './schema.js'
