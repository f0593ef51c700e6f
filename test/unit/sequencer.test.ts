/** The order of test files: the long ones first, a file that drives the fault matrix weighed with the matrix. */
import {statSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {weightOf} from '../helpers/sequencer.js'

const size = (file: string) => statSync(file).size

describe('a test file weighs', () => {
  it('its own bytes and those of the test modules it imports, but not the helpers every file uses', () => {
    const part = 'test/e2e/faults-vms-1.test.ts'
    expect(weightOf(part)).toBe(size(part) + size('test/e2e/fault-matrix.ts'))
    expect(weightOf('test/cmd/faults-1.test.ts')).toBe(size('test/cmd/faults-1.test.ts') + size('test/e2e/fault-matrix.ts'))
    expect(weightOf('test/e2e/jobs.test.ts')).toBe(size('test/e2e/jobs.test.ts') + size('test/e2e/job-vms.ts'))
    expect(weightOf('test/unit/sequencer.test.ts')).toBe(size('test/unit/sequencer.test.ts'))
  })

  it('so that a part of the fault matrix goes before the longest file of its own', () => {
    expect(weightOf('test/e2e/faults-vms-3.test.ts')).toBeGreaterThan(weightOf('test/e2e/jobs.test.ts'))
  })
})
