/**
 * The commands a run prints for later work as printed: run a job on a VM of another fleet from a config directory
 * that is not the default, then paste the printed `targon jobs wait` into a shell.
 */
import {execFile} from 'node:child_process'
import {promisify} from 'node:util'
import {afterAll, describe, expect, it} from 'vitest'

import {BIN, baseEnv, parseJson} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {simulatorEnv} from '../helpers/simulator.js'

const simulated = useVmFixture({inProcess: true, env: {TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
const {configDir, targon} = simulated

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

describe('follow-up commands', () => {
  it('printed by run carry the fleet and the config directory, and work when pasted', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'train', '--no-bootstrap', '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm = parseJson(up).data.vms[0]
    const run = await targon(['run', vm.name, '--fleet', 'train', '--detach', '--no-sync', '--', 'sleep 1; echo done'])
    expect(run.code, run.stderr).toBe(0)
    const printed = /(TARGON_CONFIG_DIR=\S+ targon jobs wait \S+ --fleet train) waits for it/.exec(run.stderr)?.[1]
    expect(printed, run.stderr).toBeDefined()
    expect(printed).toContain(`TARGON_CONFIG_DIR=${configDir} `)
    // Pasted into a shell where `targon` is this CLI and the environment knows nothing of the config directory.
    const env = baseEnv(simulatorEnv(simulated.sim, {}))
    const pasted = await promisify(execFile)('bash', ['-c', `targon() { ${process.execPath} ${BIN} "$@"; }; ${printed}`], {env}).then(
      () => 0,
      (error: {code: number; stderr: string}) => error,
    )
    expect(pasted).toBe(0)
  })
})
