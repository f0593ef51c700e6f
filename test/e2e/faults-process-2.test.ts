/** The fault scenarios that need a process of the CLI's own (signals, a watched process), part 2 of 2 (see fault-matrix.ts). */
import {faultMatrix} from './fault-matrix.js'

faultMatrix('process', 2, 2)
