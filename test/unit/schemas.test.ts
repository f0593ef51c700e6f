import {readFileSync, readdirSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import {DATA_SCHEMAS, jsonSchemas, schemaVersion} from '../../src/lib/cli/contract.js'
import {CONFIG_KEYS} from '../../src/lib/adapters/settings/config-keys.js'
import {SETTINGS} from '../../src/lib/adapters/settings/table.js'

describe('the --json contract', () => {
  it('matches the JSON Schema snapshots under schemas/ (run npm run schemas after an intended change)', () => {
    const generated = jsonSchemas()
    expect(readdirSync(new URL('../../schemas/', import.meta.url)).sort()).toEqual(Object.keys(generated).sort())
    for (const [file, schema] of Object.entries(generated)) {
      expect(JSON.parse(readFileSync(new URL(`../../schemas/${file}`, import.meta.url), 'utf8')), file).toEqual(schema)
    }
  })

  it('says which commands changed meaning: their versions, each with its row in docs/json-contract-changes.md', () => {
    const versions = Object.fromEntries(Object.keys(DATA_SCHEMAS).map((command) => [command, schemaVersion(command)]))
    expect(Object.fromEntries(Object.entries(versions).filter(([, version]) => version > 1))).toEqual({
      cost: 2,
      credits: 2,
      status: 2,
      sweep: 2,
      up: 2,
    })
    const changes = readFileSync(new URL('../../docs/json-contract-changes.md', import.meta.url), 'utf8')
    for (const [command, version] of Object.entries(versions))
      if (version > 1) expect(changes, command).toContain(`| \`${command}\` | ${version} |`)
  })

  it('names the config keys the settings table stores, in its order', () => {
    const stored = Object.entries(SETTINGS)
      .filter(([, spec]) => spec.stored)
      .map(([key]) => key)
    expect([...CONFIG_KEYS]).toEqual(stored)
  })
})
