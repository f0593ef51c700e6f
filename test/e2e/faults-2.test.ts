/** The fault matrix, part 2 of 2 (see fault-matrix.ts). */
import {faultMatrix} from './fault-matrix.js'

faultMatrix(2, 2)
