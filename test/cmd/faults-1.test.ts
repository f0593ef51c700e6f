/** The fault scenarios that need neither simulated VMs nor a process, in process, part 1 of 2 (see test/e2e/fault-matrix.ts). */
import {faultMatrix} from '../e2e/fault-matrix.js'

faultMatrix('none', 1, 2)
