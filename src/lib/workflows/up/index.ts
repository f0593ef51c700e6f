/** The public entry of the up workflows: what commands may use of them (lint holds commands to it). */
export {planUp} from './plan.js'
export type {UpPlan, UpResult} from './schema.js'
export {readUpSettings} from './settings.js'
