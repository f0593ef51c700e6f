/** The fault matrix, part 1 (see fault-matrix.ts). */
import {FAULT_MATRIX_PARTS, faultMatrix} from './fault-matrix.js'

faultMatrix(1, FAULT_MATRIX_PARTS)
