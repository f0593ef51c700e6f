/** The command reference under docs/reference/ against the build's oclif manifest (npm run build writes it). */
import {readFileSync, readdirSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {readManifest} from '../../scripts/flags.mjs'
import {pageName, referencePages} from '../../scripts/reference.mjs'
import {COMMANDS} from '../../src/cli.js'

type ManifestFlag = {allowNo?: boolean; default?: unknown; name: string; options?: string[]}

const DIR = new URL('../../docs/reference/', import.meta.url)
const STALE = 'docs/reference/ is stale: run npm run reference'

describe('the command reference', () => {
  it('is the one the manifest generates, a page per command (run npm run reference after an intended change)', () => {
    const generated = referencePages(readManifest())
    expect(Object.keys(generated).sort()).toEqual(['README.md', ...Object.keys(COMMANDS).map(pageName)].sort())
    expect(readdirSync(DIR).sort(), STALE).toEqual(Object.keys(generated).sort())
    for (const [file, page] of Object.entries(generated)) expect(readFileSync(new URL(file, DIR), 'utf8'), `${file}: ${STALE}`).toBe(page)
  })

  it('documents every flag of every command, with its default and options', () => {
    const commands: Array<{flags: Record<string, ManifestFlag>; id: string}> = Object.values(readManifest().commands)
    for (const command of commands) {
      const page = readFileSync(new URL(pageName(command.id), DIR), 'utf8')
      for (const flag of Object.values(command.flags)) {
        expect(page, `${command.id} --${flag.name}`).toContain(`--${flag.allowNo ? '[no-]' : ''}${flag.name}`)
        if (typeof flag.default === 'number') expect(page).toContain(`Default: \`${flag.default}\``)
        for (const option of flag.options ?? []) expect(page).toContain(`\`${option}\``)
      }
    }
  })
})
