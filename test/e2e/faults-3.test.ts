/** The fault matrix, part 3 (see fault-matrix.ts). */
import {FAULT_MATRIX_PARTS, faultMatrix} from './fault-matrix.js'

faultMatrix(3, FAULT_MATRIX_PARTS)
