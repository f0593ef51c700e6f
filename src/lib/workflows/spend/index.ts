/** The public entry of the spend workflows: what commands may use of them (lint holds commands to it). */
export {runCost} from './cost-report.js'
export {runCredits} from './credits.js'
export {COST_GROUPINGS} from './schema.js'
export type {CostResult, CreditsResult} from './schema.js'
