/** The command line as the build's oclif manifest has it (npm run build writes it), against the snapshots under flags/. */
import {readFileSync, readdirSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {flagSnapshots, readManifest} from '../../scripts/flags.mjs'
import {COMMANDS} from '../../src/cli.js'

describe('the command line', () => {
  it('has the flags and arguments of the snapshots under flags/ (run npm run flags after an intended change)', () => {
    // The manifest is written by npm run build; one from an older build would not know a new command.
    const manifest = readManifest()
    expect(Object.keys(manifest.commands).sort(), 'oclif.manifest.json is stale: run npm run build').toEqual(Object.keys(COMMANDS).sort())
    const generated = flagSnapshots(manifest)
    expect(readdirSync(new URL('../../flags/', import.meta.url)).sort(), 'run npm run flags after an intended change').toEqual(
      Object.keys(generated).sort(),
    )
    for (const [file, snapshot] of Object.entries(generated)) {
      expect(
        JSON.parse(readFileSync(new URL(`../../flags/${file}`, import.meta.url), 'utf8')),
        `flags/${file}: run npm run flags after an intended change`,
      ).toEqual(snapshot)
    }
  })
})
