/** The fault scenarios that need a process of the CLI's own: signals, a working directory (see fault-matrix.ts). */
import {faultMatrix} from './fault-matrix.js'

faultMatrix('process')
