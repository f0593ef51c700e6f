/**
 * Tests run targon through the one shared fixture (test/helpers/fixture.ts): no file outside test/helpers defines a
 * targon wrapper of its own around runCli or runInProcess, whose environment, config directory and --json checks
 * would drift from the fixture's. A file binds `targon` only to the fixture's: `targonFor(…)` or a use…Fixture's field.
 */
import {readFileSync, readdirSync} from 'node:fs'
import {join, relative, sep} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url))
const HELPERS_DIR = join(TEST_DIR, 'helpers') + sep
// This file, whose examples below are wrappers.
const THIS_FILE = fileURLToPath(import.meta.url)

/** The forms of a wrapper named targon…: a function, a method, a field or variable holding one, or any other binding. */
const WRAPPER = [
  /\bfunction\s+targon\w*\s*[(<]/,
  /^\s*(async\s+)?targon\w*\s*\([^)]*\)\s*(:[^{]+)?\{\s*$/,
  /\btargon\w*\s*[:=]\s*(async\s*)?(\(|function\b)/,
  /\b(const|let|var)\s+targon\w*\s*(:[^=]*)?=(?!\s*targonFor\()/,
]

const wrappers = (source: string) => source.split('\n').filter((line) => WRAPPER.some((form) => form.test(line)))

function sources(): string[] {
  return readdirSync(TEST_DIR, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile() && /\.[cm]?[jt]s$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => !file.startsWith(HELPERS_DIR) && file !== THIS_FILE)
}

describe('one CLI fixture', () => {
  it('no test file outside test/helpers defines its own targon wrapper', () => {
    const offenders = sources().flatMap((file) =>
      wrappers(readFileSync(file, 'utf8')).map((line) => `${relative(TEST_DIR, file)}: ${line.trim()}`),
    )
    expect(offenders).toEqual([])
  })

  it('tells a wrapper in each of its forms from a use of the fixture', () => {
    const own = [
      'function targon(args: string[], options: CliOptions = {}) {',
      'async function targonShell(line: string): Promise<CliResult> {',
      '  targon(args: string[]) {',
      'const targon = (args: string[]) => runCli(args, {env: env(), nodeArgs: AUDIT, timeoutMs: 120_000})',
      'const targon = async (args: string[], expected = 0) => {',
      "const targon = join(prefix, 'bin', 'targon')",
      '  targon: (',
      '          targon: (args, options = {}) =>',
      'let targonAs: Targon = makeRunner(user)',
    ]
    const fixture = [
      'const targon = targonFor(() => ({configDir, sim}), {env: {TARGON_API_KEY: undefined}})',
      'const {configDir, targon} = simulated',
      '  targon: targonFor(() => ({configDir, sim}), {',
      '  targon: Targon',
      "const up = await targon(['up', 'rtx6000b-small', '--json'])",
      "  targon(['down', '--all']).then((result) => {",
      "expect(notifications()[0]).toMatchObject({targon: {command: 'sweep'}})",
      '/** targon: how long the DELETE answer takes. */',
    ]
    expect(own.filter((line) => wrappers(line).length === 0)).toEqual([])
    expect(fixture.filter((line) => wrappers(line).length > 0)).toEqual([])
  })
})
