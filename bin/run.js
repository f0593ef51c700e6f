#!/usr/bin/env node
// A failed write to stdout or stderr (a closed pipe, a hung-up terminal, a full disk) must never stop the work:
// an `up` whose stderr goes to `| head` still has to clean up what it created. Such errors are ignored, and the
// exit code is decided by the work alone. oclif installs its own stdout handler, which rethrows everything but
// EPIPE; it is replaced once oclif is loaded.
const ignoreWriteError = () => {}
const ignoreWriteErrors = () => {
  for (const stream of [process.stdout, process.stderr]) {
    stream.removeAllListeners('error')
    stream.on('error', ignoreWriteError)
  }
}

ignoreWriteErrors()
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
  ignoreWriteErrors()
  await bundles[1].exports.execute({dir: import.meta.url})
  for (const bundle of bundles) bundle.saveCodeCache()
  // Exit once stdout and stderr are flushed (a pipe takes 64 KiB at once; the rest is written asynchronously),
  // without waiting for closed HTTP connections to wind down, which would add a few hundred ms to every run.
  await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))))
  process.exit()
}
