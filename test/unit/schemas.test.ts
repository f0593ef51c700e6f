import {readFileSync, readdirSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import {jsonSchemas} from '../../src/lib/contract.js'

describe('the --json contract', () => {
  it('matches the JSON Schema snapshots under schemas/ (run npm run schemas after an intended change)', () => {
    const generated = jsonSchemas()
    expect(readdirSync(new URL('../../schemas/', import.meta.url)).sort()).toEqual(Object.keys(generated).sort())
    for (const [file, schema] of Object.entries(generated)) {
      expect(JSON.parse(readFileSync(new URL(`../../schemas/${file}`, import.meta.url), 'utf8')), file).toEqual(schema)
    }
  })
})
