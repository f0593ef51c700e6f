#!/usr/bin/env node
// The CLI's entry. `--version` is answered here, without loading oclif: scripts and cron jobs call it often,
// and oclif's import alone costs more than Node's own start-up. The output matches oclif's. Everything else
// goes to bin/start.js, which explains how start-up is kept fast.
const args = process.argv.slice(2)
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  // As everywhere (ignoreWriteErrors in bin/start.js): a closed pipe is not an error of the CLI.
  process.stdout.on('error', () => {})
  const {readFileSync} = await import('node:fs')
  const {version} = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`targon-fleet/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  const {start} = await import('./start.js')
  await start()
}
