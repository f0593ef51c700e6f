/** The fault matrix, part 1 of 2 (see fault-matrix.ts). */
import {faultMatrix} from './fault-matrix.js'

faultMatrix(1, 2)
