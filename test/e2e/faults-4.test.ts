/** The fault matrix, part 4 (see fault-matrix.ts). */
import {FAULT_MATRIX_PARTS, faultMatrix} from './fault-matrix.js'

faultMatrix(4, FAULT_MATRIX_PARTS)
