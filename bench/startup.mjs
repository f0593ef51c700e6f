// Start-up benchmark: median wall time of `targon --version` against bare `node -e 0`,
// interleaved in the same run so that machine noise hits both alike. Needs `npm run build`.
import {spawnSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const runs = Number(process.env.BENCH_RUNS ?? 15)
const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))

function time(args) {
  const started = process.hrtime.bigint()
  const result = spawnSync(process.execPath, args, {stdio: 'ignore'})
  if (result.status !== 0) throw new Error(`node ${args.join(' ')} exited ${result.status}`)
  return Number(process.hrtime.bigint() - started) / 1e6
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

const baseline = []
const version = []
time(['-e', '0'])
time([bin, '--version'])
for (let index = 0; index < runs; index++) {
  baseline.push(time(['-e', '0']))
  version.push(time([bin, '--version']))
}

const ratio = median(version) / median(baseline)
console.log(`runs: ${runs} each, interleaved`)
console.log(`median node -e 0:         ${median(baseline).toFixed(1)} ms`)
console.log(`median targon --version:  ${median(version).toFixed(1)} ms`)
console.log(`ratio: ${ratio.toFixed(2)} (target <= 2.0)`)
