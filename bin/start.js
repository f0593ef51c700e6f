// Start-up: everything from `node bin/run.js <command>` to oclif running the command, kept close to Node's own
// start-up time (`npm run bench:startup`, and figures 1 and 2 in BENCHMARKS.md). Each piece, why it exists, and
// what breaks without it:
//
// - Two bundles, built by scripts/build.mjs: dist/oclif-core.cjs (@oclif/core) and dist/cli.cjs (the commands and
//   what they use, except ssh2). Without them Node resolves and reads hundreds of modules on every run. oclif
//   finds the commands in oclif.manifest.json (scripts/manifest.mjs) and loads only the one being run.
// - A subset of undici, scripts/undici-core.cjs, which the build puts in place of `undici`: Agent, request and
//   the error classes. undici's own index also loads fetch, WebSocket, caches and mocks, most of its load time.
//   The source imports it through src/lib/targon/undici-subset.ts, which declares only what the subset has.
// - A compile cache: compiling the bundles is a large part of every run. chooseCache() picks one by what Node has:
//   - 'node-compile-cache': Node 22.1 and later cache compiled modules themselves (module.enableCompileCache), and
//     the bundles are loaded with plain require;
//   - 'v8-code-cache': Node 20 has no such cache, so the bundles are compiled with vm.Script and a V8 code cache of
//     our own, one file per bundle, written after the first run (so that it holds the functions the run compiled)
//     and named after the bundle's size and mtime and Node's version and flags. V8 rejects a cache it cannot use;
//     the bundle is then compiled as usual and its cache written again.
//   Both live in $XDG_CACHE_HOME/targon-fleet (else ~/.cache/targon-fleet). Deleting it is always safe, and an
//   unwritable one only costs time; one that another user owns or can write is not used (trustedCacheDir).
// - The importer. Code compiled with vm.Script cannot run import() (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING). Its
//   importModuleDynamically option would allow it, but only on the first run: Node 20 does not restore the option
//   for code compiled from a cache, so the second, cached run fails (and the option prints an ExperimentalWarning).
//   So no code in the bundles calls import() itself: cli.cjs is built with import() turned into require(), and
//   oclif's calls (for its ESM plugins: help, not-found, autocomplete) go through the importer registered here,
//   in a module that Node loaded the ordinary way. scripts/route-imports.mjs routes them, and fails the build on
//   any import() left in a bundle. With Node's compile cache import() would work anyway; the importer is used in
//   both modes so that both run the same code.
// - --liftoff-only: undici parses HTTP with a WebAssembly module. V8 would optimise it on a background thread, and
//   process exit waits for that (about 200 ms); a CLI parses a few small responses, so baseline code is enough.
//   V8 prints "unrecognized flag" (it does not throw) for a flag it does not know, on every run, so the flag is set
//   only on the V8 versions where it was checked (v8FlagsFor).
// - Exit as soon as stdout and stderr are flushed, without waiting for closed HTTP connections to wind down, which
//   would add a few hundred ms to every run.
//
// test/e2e/startup.test.ts runs every command's --help and `offers --json` cold and then cached;
// test/unit/startup.test.ts covers the choices made here.
import {createHash} from 'node:crypto'
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import * as nodeModule from 'node:module'
import {homedir} from 'node:os'
import {basename, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {setFlagsFromString} from 'node:v8'
import {Script} from 'node:vm'

/** Where scripts/route-imports.mjs makes oclif's bundled code look for the importer. */
const IMPORTER = Symbol.for('targon-fleet.import')

/**
 * Which compile cache start-up uses: Node's own where node:module can enable it (Node 22.1 and later), else
 * the CLI's V8 code cache (Node 20).
 * @param {object} nodeModule node:module, or a stand-in: only its enableCompileCache counts
 * @returns {'node-compile-cache' | 'v8-code-cache'}
 */
export function chooseCache(nodeModule) {
  return typeof nodeModule.enableCompileCache === 'function' ? 'node-compile-cache' : 'v8-code-cache'
}

/**
 * The V8 flags to set, for a V8 version (process.versions.v8). --liftoff-only was checked with
 * `node --v8-options` on V8 11.3 (Node 20), 12.4 (Node 22) and 13.6 (Node 24); a newer V8 goes without it
 * until someone checks it there and raises the bound.
 * @param {string} v8Version
 * @returns {string[]}
 */
export function v8FlagsFor(v8Version) {
  const major = Number.parseInt(v8Version, 10)
  return major >= 11 && major <= 13 ? ['--liftoff-only'] : []
}

// A failed write to stdout or stderr (a closed pipe, a hung-up terminal, a full disk) must never stop the work:
// an `up` whose stderr goes to `| head` still has to clean up what it created. Such errors are ignored, and the
// exit code is decided by the work alone. oclif installs its own stdout handler, which rethrows everything but
// EPIPE; start() replaces it once oclif is loaded.
const ignoreWriteError = () => {}
function ignoreWriteErrors() {
  for (const stream of [process.stdout, process.stderr]) {
    stream.removeAllListeners('error')
    stream.on('error', ignoreWriteError)
  }
}

/** Loads the bundles, runs the command line through oclif, and exits. */
export async function start() {
  ignoreWriteErrors()
  for (const flag of v8FlagsFor(process.versions.v8)) setFlagsFromString(flag)
  globalThis[IMPORTER] = (url) => import(url)
  const cacheDir = trustedCacheDir(join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'targon-fleet'))
  const cli = chooseCache(nodeModule) === 'node-compile-cache' ? loadWithNodeCompileCache(cacheDir) : loadWithV8CodeCache(cacheDir)
  ignoreWriteErrors()
  await cli.exports.execute({dir: import.meta.url})
  cli.saveCache()
  // A pipe takes 64 KiB at once; the rest is written asynchronously.
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))))
  process.exit()
}

const bundleUrl = (name) => new URL(`../dist/${name}`, import.meta.url)

/**
 * Code from a compile cache runs as whoever starts targon: a cache directory (or file) that another user owns or can
 * write is not used at all, silently, which only costs start-up time.
 * @param {string} dir
 * @returns {string | undefined}
 */
export function trustedCacheDir(dir) {
  try {
    mkdirSync(dir, {mode: 0o700, recursive: true})
    const stats = lstatSync(dir)
    // Its parent must not let another user swap the directory after this check (Node's own cache checks no file).
    const parent = lstatSync(dirname(dir))
    const parentSafe = (parent.mode & 0o022) === 0 || (parent.mode & 0o1000) !== 0
    return stats.isDirectory() && isOwnAndPrivate(stats) && parentSafe ? dir : undefined
  } catch {
    return undefined
  }
}

/** @param {import('node:fs').Stats} stats */
function isOwnAndPrivate(stats) {
  return (process.getuid === undefined || stats.uid === process.getuid()) && (stats.mode & 0o022) === 0
}

/** @returns {{exports: any, saveCache: () => void}} */
function loadWithNodeCompileCache(cacheDir) {
  // Fails quietly (it returns a status) when the directory cannot be used.
  if (cacheDir !== undefined) nodeModule.enableCompileCache(cacheDir)
  return {
    exports: nodeModule.createRequire(import.meta.url)(fileURLToPath(bundleUrl('cli.cjs'))),
    // Node writes its cache as it exits, process.exit() included.
    saveCache: () => {},
  }
}

/** @returns {{exports: any, saveCache: () => void}} */
function loadWithV8CodeCache(cacheDir) {
  // cli.cjs requires ./oclif-core.cjs, so that is loaded first, through the cache, to be found already loaded.
  const bundles = [loadBundle(bundleUrl('oclif-core.cjs'), cacheDir), loadBundle(bundleUrl('cli.cjs'), cacheDir)]
  return {
    exports: bundles[1].exports,
    saveCache: () => {
      for (const bundle of bundles) bundle.saveCodeCache()
    },
  }
}

/**
 * Runs a bundle compiled through its V8 code cache, and registers it under its path, so that later require()
 * calls (from the other bundle, or oclif's require of the command table) return this same instance.
 * @returns {{exports: any, saveCodeCache: () => void}}
 */
function loadBundle(url, cacheDir) {
  const filename = fileURLToPath(url)
  const source = readFileSync(filename, 'utf8')
  const cacheFile = codeCachePath(filename, cacheDir)
  const cachedData = readOptional(cacheFile)
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {cachedData, filename})
  const require = nodeModule.createRequire(filename)
  const module = new nodeModule.Module(filename)
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
        const partial = `${cacheFile}.${process.pid}.tmp`
        rmSync(partial, {force: true})
        writeFileSync(partial, script.createCachedData(), {flag: 'wx', mode: 0o600})
        renameSync(partial, cacheFile)
        const sameBundle = basename(cacheFile).replace(/[^-]+\.v8cache$/, '')
        for (const name of readdirSync(cacheDir)) {
          if (name.startsWith(sameBundle) && join(cacheDir, name) !== cacheFile) rmSync(join(cacheDir, name), {force: true})
        }
      } catch {
        // An unwritable cache directory only costs start-up time.
      }
    },
  }
}

/** <cache dir>/<bundle>-<hash of its path>-<hash of what the code cache depends on>.v8cache */
function codeCachePath(filename, cacheDir) {
  if (cacheDir === undefined) return undefined
  try {
    const {mtimeMs, size} = statSync(filename)
    const hash = (value) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 12)
    const build = hash([size, mtimeMs, process.version, process.arch, process.execArgv, process.env.NODE_OPTIONS ?? ''])
    return join(cacheDir, `${basename(filename, '.cjs')}-${hash(filename)}-${build}.v8cache`)
  } catch {
    return undefined
  }
}

/** The cache file's bytes, read without following a link, and only if this user owns it and nobody else can write it. */
function readOptional(path) {
  if (path === undefined) return undefined
  let fd
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
    return isOwnAndPrivate(fstatSync(fd)) ? readFileSync(fd) : undefined
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}
