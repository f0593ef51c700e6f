// import() in the bundles. Code that bin/start.js compiles with a V8 code cache cannot run import() (its header
// says why), so the build routes every import() of the bundled packages through an importer that bin/start.js
// registers, and fails on any import() left in a bundle.
import {readFile} from 'node:fs/promises'

/** The global (Symbol.for) under which bin/start.js registers its importer. */
export const IMPORTER_KEY = 'targon-fleet.import'

/**
 * Put at the top of a bundle whose code is routed. A bundle that other code requires the ordinary way
 * (scripts/schemas.mjs, or Node's compile cache) may run import() itself, hence the fallback.
 */
export const IMPORTER_DEFINITION = `var __targonImport=globalThis[Symbol.for("${IMPORTER_KEY}")]??(url=>import(url));`

/**
 * Every `await import(` of the bundled packages, by file, with how many there are: a package update that adds
 * or removes one fails the build here.
 */
const ROUTED_IMPORTS = {
  // oclif's ESM plugins: help, not-found, autocomplete
  '@oclif/core/lib/module-loader.js': 3,
  // tsx, for a linked TypeScript plugin in development
  '@oclif/core/lib/config/ts-path.js': 1,
  // a plugin's oclif.config.js or .oclifrc.js, searched when its package.json has no oclif section
  'lilconfig/src/index.js': 1,
}

/** esbuild plugin: rewrites the import() calls listed above to call the importer, and checks that it met each file. */
export const routeImports = {
  name: 'route-imports',
  setup(esbuild) {
    const files = Object.keys(ROUTED_IMPORTS)
    const pattern = new RegExp(`/node_modules/(${files.map((file) => file.replaceAll(/[./]/g, '\\$&')).join('|')})$`)
    const routed = new Set()
    esbuild.onLoad({filter: pattern}, async ({path}) => {
      const file = pattern.exec(path)[1]
      const source = await readFile(path, 'utf8')
      const found = source.split('await import(').length - 1
      if (found !== ROUTED_IMPORTS[file]) {
        throw new Error(`expected ${ROUTED_IMPORTS[file]} import() calls in ${path}, found ${found}: check the package version`)
      }
      routed.add(file)
      return {contents: source.replaceAll('await import(', 'await __targonImport('), loader: 'js'}
    })
    esbuild.onEnd((result) => {
      const missed = files.filter((file) => !routed.has(file))
      if (result.errors.length === 0 && missed.length > 0)
        throw new Error(`not in the bundle any more, remove from ROUTED_IMPORTS: ${missed.join(', ')}`)
    })
  },
}

/**
 * Throws if a bundle's code calls import() other than through the importer, naming the file and showing each call.
 * `import()` with nothing inside is text, not a call (oclif's error messages say "import() failed to load").
 */
export function assertImportsRouted(file, code) {
  const rest = code.replace(IMPORTER_DEFINITION, '')
  const calls = [...rest.matchAll(/(?<![\w$.])import\s*\((?!\s*\))/g)]
  if (calls.length === 0) return
  const snippets = calls.map(({index}) => `  …${rest.slice(Math.max(0, index - 60), index + 60).replaceAll('\n', ' ')}…`)
  throw new Error(
    `${file}: import() that the V8 code cache cannot run (see bin/start.js); route it through the importer in scripts/route-imports.mjs:\n${snippets.join('\n')}`,
  )
}
