// Builds the CLI into two minified CommonJS files, which bin/load-bundle.js loads with a V8 code cache:
// - dist/oclif-core.cjs: @oclif/core;
// - dist/cli.cjs: the commands and everything they use except ssh2, which has an optional native addon
//   and loads only for SSH work.
// Code compiled from a V8 code cache cannot run import() on Node 20 (the host options that resolve it are
// not restored). So cli.cjs turns import() into require(), and oclif's module loader, which must import()
// the ESM plugins (help, not-found, autocomplete), calls an importer that bin/load-bundle.js provides.
import {build} from 'esbuild'
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const require = createRequire(import.meta.url)

const shared = {
  bundle: true,
  format: 'cjs',
  keepNames: true,
  legalComments: 'linked',
  logLevel: 'warning',
  minify: true,
  platform: 'node',
  sourcemap: 'linked',
  target: 'node20.19',
}

/** The three import() calls of oclif's module loader go through the importer (see above). */
const oclifImporter = {
  name: 'oclif-importer',
  setup(esbuild) {
    const loader = join(dirname(require.resolve('@oclif/core')), 'module-loader.js')
    esbuild.onLoad({filter: /module-loader\.js$/}, async ({path}) => {
      if (path !== loader) return undefined
      const source = await readFile(path, 'utf8')
      const patched = source.replaceAll('await import(', 'await (globalThis[Symbol.for("targon-fleet.import")] ?? ((url) => import(url)))(')
      const count = patched.split('targon-fleet.import').length - 1
      if (count !== 3) throw new Error(`expected 3 import() calls in ${path}, found ${count}: check the @oclif/core version`)
      return {contents: patched, loader: 'js'}
    })
  },
}

/** Bare imports resolved elsewhere: @oclif/core to the sibling file, undici to the subset the CLI uses. */
const redirects = {
  name: 'redirects',
  setup(esbuild) {
    esbuild.onResolve({filter: /^@oclif\/core$/}, () => ({external: true, path: './oclif-core.cjs'}))
    esbuild.onResolve({filter: /^undici$/}, () => ({path: fileURLToPath(new URL('undici-core.cjs', import.meta.url))}))
  },
}

await build({
  ...shared,
  entryPoints: [require.resolve('@oclif/core')],
  // @oclif/core reads tsconfig files with typescript only when developing a linked plugin.
  external: ['typescript'],
  outfile: 'dist/oclif-core.cjs',
  plugins: [oclifImporter],
})

await build({
  ...shared,
  entryPoints: ['src/cli.ts'],
  external: ['ssh2'],
  loader: {'.sh': 'text'},
  outfile: 'dist/cli.cjs',
  plugins: [redirects],
  supported: {'dynamic-import': false},
})
