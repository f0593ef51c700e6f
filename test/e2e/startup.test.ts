/**
 * Start-up (bin/start.js): the bundles are loaded through a compile cache in the user's cache directory, Node's
 * own where it has one, else a V8 code cache of the CLI's. A cache is written once, reused, replaced when
 * rejected, and never needed: without a writable cache directory the CLI runs as before. Every command must
 * behave the same on a cold run and on a cached one (a sample of commands, from every bundle), including oclif's
 * import() of its ESM help plugin and the command_not_found hook in the bundle, without a word on stderr.
 */
import {readFileSync, readdirSync, statSync, writeFileSync} from 'node:fs'
import * as nodeModule from 'node:module'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {chooseCache} from '../../bin/start.js'
import {ROOT, parseJson, runCli, tempDir} from '../helpers/cli.js'
import {startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator

beforeAll(async () => {
  sim = await startSimulator()
})

afterAll(async () => {
  await sim.stop()
})

function offersIn(cacheHome: string) {
  return runCli(['offers', '--json'], {env: {TARGON_API_URL: sim.url, XDG_CACHE_HOME: cacheHome}})
}

/** Every file in the cache directory, at any depth (Node's compile cache makes a directory per Node version). */
function filesIn(cacheHome: string): string[] {
  const dir = join(cacheHome, 'targon-fleet')
  return readdirSync(dir, {recursive: true, withFileTypes: true}).flatMap((entry) =>
    entry.isFile() ? [join(entry.parentPath, entry.name)] : [],
  )
}

function cacheFiles(cacheHome: string): Map<string, {mode: number; mtimeMs: number; bytes: Buffer}> {
  const dir = join(cacheHome, 'targon-fleet')
  return new Map(
    readdirSync(dir).map((name) => {
      const {mode, mtimeMs} = statSync(join(dir, name))
      return [name, {bytes: readFileSync(join(dir, name)), mode: mode & 0o777, mtimeMs}]
    }),
  )
}

/** The result without its read time, to compare two runs. */
function offersData(result: Awaited<ReturnType<typeof offersIn>>) {
  expect(result.code).toBe(0)
  expect(result.stderr).toBe('')
  const doc = parseJson(result)
  delete doc.data.as_of
  return doc
}

const readJson = (...path: string[]) => JSON.parse(readFileSync(join(ROOT, ...path), 'utf8'))
/** Every command: the CLI's own (in the manifest that the build writes) and its plugins'. */
const commandIds = [
  ['oclif.manifest.json'],
  ...(readJson('package.json') as {oclif: {plugins: string[]}}).oclif.plugins.map((plugin) => [
    'node_modules',
    plugin,
    'oclif.manifest.json',
  ]),
].flatMap((manifest) => Object.keys((readJson(...manifest) as {commands: object}).commands))

/**
 * The commands whose help runs cold and cached: every command lives in the same bundles (the CLI's and each plugin's),
 * so a few prove the cache for all; test/cmd/help.test.ts prints every command's help.
 */
const SAMPLED = ['up', 'dstack:scale', 'config:set', 'help', 'autocomplete']

describe('a cold run, then a cached one', () => {
  it('samples commands that exist, of the CLI and of each plugin', () => {
    expect(SAMPLED.filter((id) => !commandIds.includes(id))).toEqual([])
  })
  const helpRuns = [['--help'], ...SAMPLED.map((id) => [...id.split(':'), '--help'])].map((args) => ({args, line: args.join(' ')}))
  it.each(helpRuns)('targon $line prints the same help', async ({args}) => {
    const cacheHome = tempDir('targon-cache-')
    const cold = await runCli(args, {env: {XDG_CACHE_HOME: cacheHome}})
    expect(filesIn(cacheHome).length).toBeGreaterThan(0)
    const cached = await runCli(args, {env: {XDG_CACHE_HOME: cacheHome}})
    for (const result of [cold, cached]) {
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
    }

    expect(cold.stdout).toContain('USAGE')
    expect(cached.stdout).toBe(cold.stdout)
  })

  it('targon offers --json reads the same offers', async () => {
    const cacheHome = tempDir('targon-cache-')
    const cold = offersData(await offersIn(cacheHome))
    expect(filesIn(cacheHome).length).toBeGreaterThan(0)
    expect(offersData(await offersIn(cacheHome))).toEqual(cold)
  })

  it('lets oclif import its ESM help plugin and run the not-found hook', async () => {
    const cacheHome = tempDir('targon-cache-')
    for (let run = 0; run < 2; run++) {
      const help = await runCli(['help', 'up'], {env: {XDG_CACHE_HOME: cacheHome}})
      expect(help.code).toBe(0)
      expect(help.stdout).toContain('Rent GPU VMs under a price cap')
      const typo = await runCli(['ofers'], {env: {XDG_CACHE_HOME: cacheHome}})
      expect(typo.code).toBe(127)
      expect(typo.stderr).toContain('ofers is not a targon command')
      expect(typo.stderr).not.toMatch(/ERR_VM|Experimental/)
      expect(filesIn(cacheHome).length).toBeGreaterThan(0)
    }
  })

  it('needs no cache: an unusable cache directory changes nothing', async () => {
    const notADirectory = join(tempDir('targon-cache-'), 'file')
    writeFileSync(notADirectory, '')
    expect(offersData(await offersIn(notADirectory)).ok).toBe(true)
  })
})

describe.runIf(chooseCache(nodeModule) === 'v8-code-cache')('V8 code cache (Node without a compile cache)', () => {
  it('is written once per bundle (0600 in a 0700 directory), then reused unchanged with the same output', async () => {
    const cacheHome = tempDir('targon-cache-')
    const first = offersData(await offersIn(cacheHome))
    const written = cacheFiles(cacheHome)
    expect([...written.keys()].map((name) => name.replace(/-[0-9a-f]{12}-[0-9a-f]{12}\.v8cache$/, '')).sort()).toEqual([
      'cli',
      'oclif-core',
    ])
    for (const file of written.values()) {
      expect(file.mode).toBe(0o600)
      expect(file.bytes.length).toBeGreaterThan(10_000)
    }

    expect(statSync(join(cacheHome, 'targon-fleet')).mode & 0o777).toBe(0o700)
    expect(offersData(await offersIn(cacheHome))).toEqual(first)
    // Accepted by V8: a rejected cache would have been written again.
    for (const [name, file] of cacheFiles(cacheHome)) expect(file.mtimeMs).toBe(written.get(name)?.mtimeMs)
  })

  it('is replaced when V8 rejects it, and the run is unaffected', async () => {
    const cacheHome = tempDir('targon-cache-')
    const expected = offersData(await offersIn(cacheHome))
    const dir = join(cacheHome, 'targon-fleet')
    for (const name of readdirSync(dir)) writeFileSync(join(dir, name), Buffer.alloc(4096, 0x5a))
    expect(offersData(await offersIn(cacheHome))).toEqual(expected)
    for (const file of cacheFiles(cacheHome).values()) expect(file.bytes.equals(Buffer.alloc(4096, 0x5a))).toBe(false)
  })
})
