/** The public entry of the exec workflows: what commands may use of them (lint holds commands to it). */
export {DEFAULT_EXEC_PARALLEL, EXEC_TAIL_LINES, runExec} from './exec.js'
export type {ExecResult} from './schema.js'
