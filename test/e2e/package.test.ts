/**
 * The published package: only runtime files, and it installs and runs from an empty prefix.
 * (Installing fetches the dependencies from the npm registry.)
 */
import {execFile} from 'node:child_process'
import {readFileSync, readdirSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {ROOT, tempDir} from '../helpers/cli.js'
import {targonFor} from '../helpers/fixture.js'
import {startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'

const run = promisify(execFile)
let sim: TargonSimulator
let tarball: string
let files: string[]
// A fresh config directory per run, and no API key: the inventory is public.
const targon = targonFor(() => ({configDir: tempDir('targon-config-'), sim}), {env: {TARGON_API_KEY: undefined}})

beforeAll(async () => {
  sim = await startSimulator()
  const out = tempDir('targon-pack-')
  // The build has run (npm test builds first); --ignore-scripts skips prepack's second build.
  const {stdout} = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], {cwd: ROOT})
  const [packed] = JSON.parse(stdout) as {filename: string; files: {path: string}[]}[]
  tarball = join(out, packed!.filename)
  files = packed!.files.map((file) => file.path)
}, 120_000)

afterAll(async () => {
  await sim.stop()
})

describe('npm package', () => {
  it('holds only runtime files: the two bundles (with the bootstrap script inside) and their loader', () => {
    expect(files).toEqual(
      expect.arrayContaining(['LICENSE', 'bin/run.js', 'bin/start.js', 'oclif.manifest.json', 'dist/cli.cjs', 'dist/oclif-core.cjs']),
    )
    expect(readFileSync(join(ROOT, 'dist', 'cli.cjs'), 'utf8')).toContain(
      '# targon-fleet VM bootstrap: Docker, the NVIDIA Container Toolkit and the dstack shim',
    )
    expect(files.filter((file) => /^(test|src|scripts|bench|schemas)\//.test(file))).toEqual([])
  })

  it('installs globally into an empty prefix and runs', async () => {
    const prefix = tempDir('targon-prefix-')
    await run('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', tarball], {
      env: {...process.env, npm_config_loglevel: 'error'},
      timeout: 240_000,
    })
    // What the bundles leave to install: ssh2, and @oclif/core for the help and autocomplete plugins (106 packages when
    // conf, listr2, undici and zod, which the bundle holds, were installed too).
    const installed = readdirSync(join(prefix, 'lib', 'node_modules', 'targon-fleet', 'node_modules'), {recursive: true}).filter(
      (path) => String(path).endsWith('package.json') && !String(path).includes('/dist/'),
    )
    expect(installed.length).toBeLessThan(80)
    // The command that the install put on its prefix's PATH.
    const fromPrefix = {executable: join(prefix, 'bin', 'targon')}
    const help = await targon(['--help'], fromPrefix)
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toContain('offers')
    expect(help.stdout).toContain('up')
    const offersHelp = await targon(['offers', '--help'], fromPrefix)
    expect(offersHelp.code, offersHelp.stderr).toBe(0)
    expect(offersHelp.stdout).toContain('EXAMPLES')
    const offers = await targon(['offers', '--json'], fromPrefix)
    expect(offers.code, offers.stderr).toBe(0)
    expect(offers.json.ok).toBe(true)
    expect(offers.json.data.offers.length).toBeGreaterThan(0)
  }, 300_000)
})
