/**
 * Runs the Targon simulator as a standalone server (for the demo and manual testing):
 *   npx tsx test/simulator/main.ts [--port 8787] [--boot-ms 2000] [--variant a|b|both]
 * Prints the environment to export, then serves until interrupted.
 */
import {parseArgs} from 'node:util'

import {DEFAULT_TOKEN, type InventoryVariant, TargonSimulator} from './simulator.js'

const {values} = parseArgs({
  options: {
    'boot-ms': {default: '2000', type: 'string'},
    port: {default: '0', type: 'string'},
    variant: {default: 'b', type: 'string'},
  },
})

const sim = new TargonSimulator({bootDelayMs: Number(values['boot-ms']), inventoryVariant: values.variant as InventoryVariant})
const url = await sim.start(Number(values.port))
process.stdout.write(`export TARGON_API_URL=${url}\nexport TARGON_API_KEY=${DEFAULT_TOKEN}\n`)
const stop = () => {
  void sim.stop().then(() => process.exit(0))
}

process.on('SIGINT', stop)
process.on('SIGTERM', stop)
