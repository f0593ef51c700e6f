/** The fault scenarios that need simulated VMs, part 3 of 3 (see fault-matrix.ts). */
import {faultMatrix} from './fault-matrix.js'

faultMatrix('vms', 3, 3)
