/** The public entry of the dstack-scale workflows: what commands may use of them (lint holds commands to it). */
export {runDstackScale} from './scale.js'
export type {DstackScaleResult} from './schema.js'
