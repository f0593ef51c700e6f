/**
 * What the tests of `targon run` and `targon jobs` share (run.test.ts, jobs.test.ts): simulated VMs that are real SSH
 * hosts, with a quick idle sampler and shim check, the CLI in process, and a few steps on them.
 */
import {existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {expect} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'

/** The file's fixture (its hooks are registered where this is called) and the steps bound to it. */
export function useJobVms() {
  const simulated = useVmFixture({inProcess: true, env: {TARGON_IDLE_SAMPLE_INTERVAL: '1', TARGON_SHIM_HEALTH_TIMEOUT: '4'}})
  const {targon} = simulated

  /** One VM without the bootstrap (the doubles are there from boot): its name. */
  async function rentBare(fleet: string): Promise<{name: string; uid: string}> {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    return parseJson(up).data.vms[0]
  }

  /** A command on the VM as ubuntu: its stdout, and its exit code. */
  async function onVm(vm: string, command: string): Promise<{code: number; stdout: string}> {
    const result = await targon(['exec', '--vms', vm, '--json', '--', command])
    const doc = parseJson(result)
    return {code: doc.data.results[0].exit_code, stdout: (doc.data.results[0].tail as string[]).join('\n')}
  }

  /** The uids of the VMs that bill. */
  const billing = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

  /** The ids of the jobs started on a simulated VM (its job directories). */
  function jobsOn(uid: string): string[] {
    const dir = join(simulated.farm.vm(uid).dir, 'upper', 'home/ubuntu/.targon/jobs')
    return existsSync(dir) ? readdirSync(dir) : []
  }

  return {billing, configDir: simulated.configDir, jobsOn, onVm, rentBare, simulated, targon}
}

/** A local project directory: a script that writes outputs, a data file, and a link (never sent). */
export function project(): string {
  const dir = tempDir('targon-project-')
  writeFileSync(
    join(dir, 'train.sh'),
    'echo "epochs=$EPOCHS note=$NOTE"; pwd; mkdir -p results/deep; echo model >results/model.txt; echo deep >results/deep/x.txt; printf "\\033[31mred\\n"; head -c 5000 /dev/zero | tr "\\0" a; echo; exit "${FAIL:-0}"\n',
  )
  mkdirSync(join(dir, 'data'))
  writeFileSync(join(dir, 'data', 'input.txt'), 'input\n')
  return dir
}
