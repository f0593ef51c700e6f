/** The fault matrix, part 2 (see fault-matrix.ts). */
import {FAULT_MATRIX_PARTS, faultMatrix} from './fault-matrix.js'

faultMatrix(2, FAULT_MATRIX_PARTS)
