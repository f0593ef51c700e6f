/**
 * The choices that start-up makes (bin/start.js) and the build's guard on import() in the bundles
 * (scripts/route-imports.mjs). test/e2e/startup.test.ts runs the built CLI.
 */
import {spawnSync} from 'node:child_process'
import {createRequire} from 'node:module'
import {describe, expect, it} from 'vitest'

import {chooseCache, v8FlagsFor} from '../../bin/start.js'
import {IMPORTER_DEFINITION, assertImportsRouted} from '../../scripts/route-imports.mjs'
import * as undiciSubset from '../../src/lib/adapters/targon/undici-subset.js'

describe('chooseCache', () => {
  it("uses Node's compile cache where node:module has enableCompileCache (Node 22.1 and later)", () => {
    expect(chooseCache({enableCompileCache: () => ({status: 0})})).toBe('node-compile-cache')
  })

  it('falls back to its own V8 code cache where it does not (Node 20)', () => {
    expect(chooseCache({})).toBe('v8-code-cache')
    expect(chooseCache({enableCompileCache: undefined})).toBe('v8-code-cache')
  })
})

describe('v8FlagsFor', () => {
  it('sets --liftoff-only on the V8 versions of Node 20, 22 and 24', () => {
    for (const version of ['11.3.244.8-node.38', '12.4.254.21-node.57', '13.6.233.17-node.63']) {
      expect(v8FlagsFor(version)).toEqual(['--liftoff-only'])
    }
  })

  it('sets nothing on a V8 it was not checked on, older or newer, or an unreadable version', () => {
    for (const version of ['10.2.154.26-node.36', '14.1.146.11-node.14', '', 'unknown']) expect(v8FlagsFor(version)).toEqual([])
  })

  it("sets only flags that this Node's V8 knows", () => {
    const options = spawnSync(process.execPath, ['--v8-options'], {encoding: 'utf8'}).stdout
    for (const flag of v8FlagsFor(process.versions.v8)) expect(options).toContain(`  ${flag} (`)
  })
})

describe('assertImportsRouted', () => {
  it('rejects a bundle that calls import() itself, naming the file and showing the call', () => {
    expect(() => assertImportsRouted('dist/cli.cjs', 'let m;async function f(x){m=await import(x)}')).toThrow(
      /^dist\/cli\.cjs: import\(\) that the V8 code cache cannot run.*\n {2}….*m=await import\(x\).*…$/,
    )
    expect(() => assertImportsRouted('dist/cli.cjs', 'import ("./literal.js").then(f)')).toThrow(/literal\.js/)
  })

  it('accepts calls through the importer, its definition, and import() as text or a method', () => {
    const code = `${IMPORTER_DEFINITION}\nasync function f(x){return(await __targonImport(x)).default}\nthrow Error("import() failed to load "+x);loader.import(x)`
    expect(() => assertImportsRouted('dist/oclif-core.cjs', code)).not.toThrow()
  })

  it("accepts the importer's definition only once", () => {
    expect(() => assertImportsRouted('dist/oclif-core.cjs', IMPORTER_DEFINITION.repeat(2))).toThrow(/url=>import\(url\)/)
  })
})

describe('undici-subset.ts', () => {
  it('exports only what the bundled subset (scripts/undici-core.cjs) has, as the same values', () => {
    const shipped = createRequire(import.meta.url)('../../scripts/undici-core.cjs')
    expect(Object.keys(undiciSubset).sort()).toEqual(['Agent', 'errors', 'request'])
    expect(shipped.Agent).toBe(undiciSubset.Agent)
    expect(shipped.request).toBeTypeOf('function')
    expect(shipped.errors.BodyTimeoutError).toBe(undiciSubset.errors.BodyTimeoutError)
    expect(shipped.errors.HeadersTimeoutError).toBe(undiciSubset.errors.HeadersTimeoutError)
  })
})
