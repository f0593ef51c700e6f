/** RELIABILITY.md against the fault matrix it is generated from (scripts/reliability.ts). */
import {existsSync, readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {reliabilityDocument} from '../../scripts/reliability.js'
import {FAULT_MATRIX_PARTS, scenarios, scenariosOfPart} from '../e2e/fault-matrix.js'

describe('RELIABILITY.md', () => {
  it('is the one the fault matrix generates (run npm run reliability after changing the matrix or the template)', () => {
    expect(readFileSync(new URL('../../RELIABILITY.md', import.meta.url), 'utf8'), 'RELIABILITY.md is stale: run npm run reliability').toBe(
      reliabilityDocument(),
    )
  })

  it('has one row per scenario, with its exit code', () => {
    const lines = reliabilityDocument().split('\n')
    const header = lines.indexOf('| area | scenario | exit | ends with |')
    const rows = lines.slice(header + 2, lines.indexOf('', header))
    expect(rows).toHaveLength(scenarios.length)
    for (const [index, scenario] of scenarios.entries()) expect(rows[index]).toContain(` | ${scenario.exit} | `)
  })

  it('is run whole by the fault matrix files: each scenario in exactly one part, the parts within a fifth of each other', () => {
    const parts = Array.from({length: FAULT_MATRIX_PARTS}, (_each, index) => scenariosOfPart(index + 1, FAULT_MATRIX_PARTS))
    expect(parts.flat().toSorted((a, b) => scenarios.indexOf(a) - scenarios.indexOf(b))).toEqual(scenarios)
    const seconds = parts.map((part) => part.reduce((total, scenario) => total + (scenario.seconds ?? 0), 0))
    expect(Math.min(...seconds)).toBeGreaterThan(0.8 * Math.max(...seconds))
    for (let part = 1; part <= FAULT_MATRIX_PARTS; part++)
      expect(existsSync(new URL(`../e2e/faults-${part}.test.ts`, import.meta.url)), `faults-${part}.test.ts`).toBe(true)
    expect(existsSync(new URL(`../e2e/faults-${FAULT_MATRIX_PARTS + 1}.test.ts`, import.meta.url))).toBe(false)
  })
})
