// Writes the JSON Schema snapshots of the --json contract to schemas/ (from the built code).
import {mkdirSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'

const {jsonSchemas} = createRequire(import.meta.url)('../dist/cli.cjs')

const dir = new URL('../schemas/', import.meta.url)
mkdirSync(dir, {recursive: true})
for (const [file, schema] of Object.entries(jsonSchemas())) writeFileSync(new URL(file, dir), `${JSON.stringify(schema, null, 2)}\n`)
console.log(`schemas/: ${Object.keys(jsonSchemas()).length} files`)
