/**
 * Runs the Targon simulator as a standalone server (for the demo and manual testing):
 *   npx tsx test/simulator/main.ts [--port 8787] [--boot-ms 2000] [--variant a|b|both] [--no-vms]
 * Prints the environment to export, then serves until interrupted.
 */
import {parseArgs} from 'node:util'

import {VmFarm} from '../vm/farm.js'
import {DEFAULT_TOKEN, type InventoryVariant, TargonSimulator} from './simulator.js'

const {values} = parseArgs({
  options: {
    'boot-ms': {default: '2000', type: 'string'},
    port: {default: '0', type: 'string'},
    'no-vms': {default: false, type: 'boolean'},
    variant: {default: 'b', type: 'string'},
  },
})

const sim = new TargonSimulator({bootDelayMs: Number(values['boot-ms']), inventoryVariant: values.variant as InventoryVariant})
// As root, every VM that reaches running is a real SSH host in its own namespaces.
const farm = process.getuid?.() === 0 && !values['no-vms'] ? new VmFarm(sim) : undefined
const url = await sim.start(Number(values.port))
process.stdout.write(`export TARGON_API_URL=${url}\nexport TARGON_API_KEY=${DEFAULT_TOKEN}\n`)
const stop = () => {
  void Promise.all([sim.stop(), farm?.stopAll()]).then(() => process.exit(0))
}

process.on('SIGINT', stop)
process.on('SIGTERM', stop)
