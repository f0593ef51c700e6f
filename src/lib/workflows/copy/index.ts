/** The public entry of the copy workflows: what commands may use of them (lint holds commands to it). */
export {CopyBudget} from './budget.js'
export {DEFAULT_COPY_PARALLEL, runCopy} from './copy.js'
export {CopyBar, size} from './progress.js'
export type {CopyResult, CopyVmResult} from './schema.js'
export {parseCopySpec} from './spec.js'
