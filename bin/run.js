#!/usr/bin/env node
// `--version` is answered without loading oclif: scripts and cron jobs call it often, and oclif's import
// alone costs more than Node's own start-up. The output matches oclif's.
const args = process.argv.slice(2)
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const {readFileSync} = await import('node:fs')
  const {version} = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`targon-fleet/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  // undici parses HTTP with a WebAssembly module. V8 would optimise it on a background thread, and process
  // exit waits for that (about 200 ms); a CLI parses a few small responses, so baseline code is enough.
  const {setFlagsFromString} = await import('node:v8')
  setFlagsFromString('--liftoff-only')
  const {loadBundle} = await import('./load-bundle.js')
  const bundles = [loadBundle(new URL('../dist/oclif-core.cjs', import.meta.url)), loadBundle(new URL('../dist/cli.cjs', import.meta.url))]
  await bundles[1].exports.execute({dir: import.meta.url})
  for (const bundle of bundles) bundle.saveCodeCache()
  // Exit once stdout and stderr are flushed (a pipe takes 64 KiB at once; the rest is written asynchronously),
  // without waiting for closed HTTP connections to wind down, which would add a few hundred ms to every run.
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))))
  process.exit()
}
