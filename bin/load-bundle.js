// Loads the CLI's CommonJS bundles (dist/*.cjs, built by scripts/build.mjs) with a V8 code cache. Node 20
// has no compile cache for modules, and compiling the bundles is a large part of every start-up. Each cache
// is a file in the user's cache directory, named after the bundle's size and mtime and Node's version and
// flags; V8 itself rejects a cache it cannot use, and then the bundle is compiled as usual and the cache
// written again.
import {createHash} from 'node:crypto'
import {mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {Module, createRequire} from 'node:module'
import {homedir} from 'node:os'
import {basename, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {Script} from 'node:vm'

// Code compiled from a code cache cannot run import() itself; oclif's module loader calls this instead.
globalThis[Symbol.for('targon-fleet.import')] = (url) => import(url)

/**
 * Runs a bundle and registers it under its path, so that later require() calls (from the other bundle, or
 * oclif's require of the command table) return this same instance.
 * @returns {{exports: any, saveCodeCache: () => void}}
 */
export function loadBundle(url) {
  const filename = fileURLToPath(url)
  const source = readFileSync(filename, 'utf8')
  const cacheFile = codeCachePath(filename)
  const cachedData = readOptional(cacheFile)
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {cachedData, filename})
  const require = createRequire(filename)
  const module = new Module(filename)
  module.filename = filename
  require.cache[filename] = module
  script.runInThisContext().call(module.exports, module.exports, require, module, filename, dirname(filename))
  module.loaded = true

  return {
    exports: module.exports,
    /**
     * Writes the cache after a run (so it holds the functions the run compiled) when there is none yet, and
     * drops the caches of earlier builds.
     */
    saveCodeCache() {
      if (cacheFile === undefined || (cachedData !== undefined && !script.cachedDataRejected)) return
      try {
        const dir = dirname(cacheFile)
        mkdirSync(dir, {mode: 0o700, recursive: true})
        const partial = `${cacheFile}.${process.pid}.tmp`
        writeFileSync(partial, script.createCachedData(), {mode: 0o600})
        renameSync(partial, cacheFile)
        const sameBundle = basename(cacheFile).replace(/[^-]+\.v8cache$/, '')
        for (const name of readdirSync(dir)) {
          if (name.startsWith(sameBundle) && join(dir, name) !== cacheFile) rmSync(join(dir, name), {force: true})
        }
      } catch {
        // An unwritable cache directory only costs start-up time.
      }
    },
  }
}

/** <cache dir>/targon-fleet/<bundle>-<hash of its path>-<hash of what the code cache depends on>.v8cache */
function codeCachePath(filename) {
  try {
    const {mtimeMs, size} = statSync(filename)
    const hash = (value) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12)
    const build = hash([size, mtimeMs, process.version, process.arch, process.execArgv, process.env.NODE_OPTIONS ?? ''])
    const root = process.env.XDG_CACHE_HOME || join(homedir(), '.cache')
    return join(root, 'targon-fleet', `${basename(filename, '.cjs')}-${hash(filename)}-${build}.v8cache`)
  } catch {
    return undefined
  }
}

function readOptional(path) {
  try {
    return path === undefined ? undefined : readFileSync(path)
  } catch {
    return undefined
  }
}
