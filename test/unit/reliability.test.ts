/** RELIABILITY.md against the fault matrix it is generated from (scripts/reliability.ts). */
import {readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {reliabilityDocument} from '../../scripts/reliability.js'
import {FAULT_MATRIX_FILES, scenarios, scenariosOf} from '../e2e/fault-matrix.js'

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

  it('is run whole by the fault matrix files: each scenario in exactly one, chosen by what it needs', () => {
    const parts = FAULT_MATRIX_FILES.map(({need, part, parts}) => scenariosOf(need, part, parts))
    expect(parts.flat().toSorted((a, b) => scenarios.indexOf(a) - scenarios.indexOf(b))).toEqual(scenarios)
    for (const {file, need, part, parts} of FAULT_MATRIX_FILES) {
      const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')
      expect(text, file).toContain(parts === 1 ? `faultMatrix('${need}')` : `faultMatrix('${need}', ${part}, ${parts})`)
    }
  })
})
