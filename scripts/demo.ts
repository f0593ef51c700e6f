/**
 * `npm run demo`: targon against the local simulator, no account needed. Runs offers, up,
 * status, ssh, down, cost and credits with their real output, and ends by checking that nothing is live.
 * As root the VM is a simulated SSH host and gets the full bootstrap (its system tools are installed
 * first, as for the tests); otherwise up stops once the VM runs.
 */
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {DEFAULT_TOKEN, TargonSimulator} from '../test/simulator/simulator.js'
import {VmFarm} from '../test/vm/farm.js'

const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const root = process.getuid?.() === 0
// The script installs what is missing, or prints in one line what it could not install.
if (root && spawnSync(fileURLToPath(new URL('prerequisites.sh', import.meta.url)), {stdio: 'inherit'}).status !== 0) process.exit(1)
const sim = new TargonSimulator({bootDelayMs: 1500})
const farm = root ? new VmFarm(sim) : undefined
await sim.start()
const env = {
  ...process.env,
  TARGON_API_KEY: DEFAULT_TOKEN,
  TARGON_API_URL: sim.url,
  TARGON_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'targon-demo-')),
}

function targon(...args: string[]): Promise<number> {
  const bold = process.stdout.isTTY && !process.env.NO_COLOR ? (text: string) => `\x1b[1m${text}\x1b[0m` : (text: string) => text
  process.stdout.write(`\n${bold(`$ targon ${args.join(' ')}`)}\n`)
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {env, stdio: ['ignore', 'inherit', 'inherit']})
    child.on('close', (code) => resolve(code ?? 1))
  })
}

let failed = false
const step = async (...args: string[]) => {
  const code = await targon(...args)
  if (code !== 0) failed = true
}

try {
  process.stdout.write(
    `Simulated Targon API at ${sim.url}${root ? ', with simulated VMs' : ' (not root: no simulated VMs, so --no-bootstrap)'}\n`,
  )
  await step('offers', '--gpu', 'rtx6000b')
  await step('up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'demo', ...(root ? [] : ['--no-bootstrap']))
  await step('status')
  // The words after -- are one line for the remote shell, as with OpenSSH: the whole command is quoted once.
  if (root) await step('ssh', 'tcli-default-demo', '--', 'hostname; docker --version; systemctl is-active dstack-shim')
  await step('down', '--all', '--yes')
  // What it cost, from the spend ledger that outlives the VM, and the org's credits.
  await step('cost', '--since', '1h', '--by', 'vm')
  await step('credits')
} finally {
  const live = sim.live()
  process.stdout.write(`\nLive VMs left on the simulator: ${live.length}\n`)
  if (live.length > 0) failed = true
  await farm?.stopAll()
  await sim.stop()
}

process.exit(failed ? 1 : 0)
