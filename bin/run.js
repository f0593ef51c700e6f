#!/usr/bin/env node
// `--version` is answered without loading oclif: scripts and cron jobs call it often, and oclif's import
// alone costs more than Node's own start-up. The output matches oclif's.
const args = process.argv.slice(2)
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const {readFileSync} = await import('node:fs')
  const {version} = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`targon-fleet/${version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  const {execute} = await import('@oclif/core')
  await execute({dir: import.meta.url})
  // The result is written (stdout and stderr are synchronous for files and pipes on Linux); do not wait for
  // closed HTTP connections to finish winding down, which otherwise adds a few hundred ms to every run.
  process.exit()
}
