/**
 * Runs the Targon simulator as a standalone server (for the demo and manual testing):
 *   npx tsx test/simulator/main.ts [--port 8787] [--boot-ms 2000] [--variant a|b|both] [--no-vms]
 *     [--capacity OFFER=AVAILABLE@SECONDS,...]
 * --capacity plays capacity over time from the start, e.g. rtx6000b-small=0@0,rtx6000b-small=1@30 (sold out,
 * one unit after 30 s); rtx6000b-small=0@0 alone: capacity never appears.
 * Prints the environment to export, then serves until interrupted.
 */
import {parseArgs} from 'node:util'

import {VmFarm} from '../vm/farm.js'
import {type CapacityChange, DEFAULT_TOKEN, type InventoryVariant, TargonSimulator} from './simulator.js'

const {values} = parseArgs({
  options: {
    'boot-ms': {default: '2000', type: 'string'},
    capacity: {default: '', type: 'string'},
    port: {default: '0', type: 'string'},
    'no-vms': {default: false, type: 'boolean'},
    variant: {default: 'b', type: 'string'},
  },
})

/** OFFER=AVAILABLE@SECONDS, comma-separated. */
function parseCapacity(text: string): CapacityChange[] {
  return text
    .split(',')
    .filter((item) => item.trim() !== '')
    .map((item) => {
      const match = /^([a-z0-9-]+)=(\d+)@(\d+(?:\.\d+)?)s?$/.exec(item.trim())
      if (!match) throw new Error(`--capacity: "${item}" is not OFFER=AVAILABLE@SECONDS, e.g. rtx6000b-small=1@30`)
      return {atMs: Number(match[3]) * 1000, available: Number(match[2]), offer: match[1] as string}
    })
}

const sim = new TargonSimulator({
  bootDelayMs: Number(values['boot-ms']),
  capacitySchedule: parseCapacity(values.capacity),
  inventoryVariant: values.variant as InventoryVariant,
})
// As root, every VM that reaches running is a real SSH host in its own namespaces.
const farm = process.getuid?.() === 0 && !values['no-vms'] ? new VmFarm(sim) : undefined
const url = await sim.start(Number(values.port))
process.stdout.write(`export TARGON_API_URL=${url}\nexport TARGON_API_KEY=${DEFAULT_TOKEN}\n`)
const stop = () => {
  void Promise.all([sim.stop(), farm?.stopAll()]).then(() => process.exit(0))
}

process.on('SIGINT', stop)
process.on('SIGTERM', stop)
