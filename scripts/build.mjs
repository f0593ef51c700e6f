// Builds the CLI into two minified CommonJS files, which bin/start.js loads (its header explains start-up):
// - dist/oclif-core.cjs: @oclif/core;
// - dist/cli.cjs: the commands and everything they use except ssh2, which has an optional native addon
//   and loads only for SSH work; `undici` is replaced by the subset in scripts/undici-core.cjs.
// No code in either bundle may call import() itself: cli.cjs turns import() into require(), and oclif's calls
// go through bin/start.js's importer (scripts/route-imports.mjs). The build fails on any other import().
import {build} from 'esbuild'
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {fileURLToPath} from 'node:url'

import {IMPORTER_DEFINITION, assertImportsRouted, routeImports} from './route-imports.mjs'

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

/**
 * Bare imports resolved elsewhere: @oclif/core to the sibling file, undici to the subset the CLI uses, and the
 * packages that would hook the process's signals behind the CLI's back to its stand-in (src/lib/cli/exit-hooks.ts).
 */
const redirects = {
  name: 'redirects',
  setup(esbuild) {
    esbuild.onResolve({filter: /^@oclif\/core$/}, () => ({external: true, path: './oclif-core.cjs'}))
    esbuild.onResolve({filter: /^undici$/}, () => ({path: fileURLToPath(new URL('undici-core.cjs', import.meta.url))}))
    esbuild.onResolve({filter: /^(when-exit|signal-exit)$/}, () => ({
      path: fileURLToPath(new URL('../src/lib/cli/exit-hooks.ts', import.meta.url)),
    }))
  },
}

await build({
  ...shared,
  // The bundle stays strict: its "use strict" must come first.
  banner: {js: `"use strict";${IMPORTER_DEFINITION}`},
  entryPoints: [require.resolve('@oclif/core')],
  // @oclif/core reads tsconfig files with typescript only when developing a linked plugin.
  external: ['typescript'],
  outfile: 'dist/oclif-core.cjs',
  plugins: [routeImports],
})

await build({
  ...shared,
  entryPoints: ['src/cli.ts'],
  external: ['ssh2'],
  loader: {'.py': 'text', '.sh': 'text'},
  outfile: 'dist/cli.cjs',
  plugins: [redirects],
  supported: {'dynamic-import': false},
})

for (const file of ['dist/oclif-core.cjs', 'dist/cli.cjs']) assertImportsRouted(file, readFileSync(file, 'utf8'))
