/**
 * What a VM can do to a fetch of a job's outputs, on simulated VMs (real sshd, needs root): a sparse file of 2 GiB
 * stops run --out and jobs fetch at their bound (job-store-limit), keeping what came; jobs fetch goes by the record
 * kept here, not the VM's; a VM whose login shell answers for another job is refused, and nothing is written; a file
 * name with a line break is printed escaped, on one line.
 */
import {existsSync, readdirSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson, tempDir, waitFor} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'

const simulated = useVmFixture({inProcess: true, defaults: {timeoutMs: 120_000}})
const {targon} = simulated

/** A small file and a sparse 2 GiB one (no disk on the VM), in out/. */
const SPARSE = 'mkdir -p out; echo small >out/a.txt; truncate -s 2G out/big'
const BOUND = 1024 ** 2

let vm: {name: string; uid: string}

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'fb', '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vm = parseJson(up).data.vms[0]
  expect((await targon(['config', 'set', 'job-store-limit', '1M'])).code).toBe(0)
}, 150_000)

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

/** A command on the VM as ubuntu: its exit code. */
async function onVm(command: string): Promise<number> {
  return parseJson(await targon(['exec', '--vms', vm.name, '--json', '--', command])).data.results[0].exit_code
}

/** A detached job of `command` with --out `out`, ended: its id. */
async function endedJob(command: string, ...out: string[]): Promise<string> {
  const started = await targon([
    'run',
    vm.name,
    '--detach',
    '--no-sync',
    ...out.flatMap((path) => ['--out', path]),
    '--json',
    '--',
    command,
  ])
  expect(started.code, started.stdout + started.stderr).toBe(0)
  const id: string = parseJson(started).data.job.id
  await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
  return id
}

/** Every file under `dir` (temporary ones included), with its size in bytes. */
function filesUnder(dir: string): {name: string; size: number}[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name)
      return {name: path.slice(dir.length + 1), size: statSync(path).size}
    })
}

describe('the bound of a fetch of outputs', () => {
  it('run --out stops at job-store-limit before a sparse 2 GiB file: exit 12, what came is kept, never more than the bound', async () => {
    const cwd = tempDir('targon-fb-run-')
    const run = await targon(['run', vm.name, '--no-sync', '--out', 'out', '--json', '--', SPARSE], {cwd})
    expect(run.code, run.stdout + run.stderr).toBe(12)
    const doc = parseJson(run)
    const id: string = doc.data.job.id
    expect(doc.error.code).toBe('COPY_FAILED')
    expect(doc.error.message).toContain(`job ${id} succeeded, but --out out was not fetched: the fetch stopped at its bound of 1M`)
    expect(doc.error.message).toContain('1 file arrived; the next file has 2G')
    expect(doc.error.message).toContain('targon config set job-store-limit SIZE')
    expect(doc.data.fetch).toMatchObject({copied: ['out/a.txt'], destination: `targon-out/${id}/`})
    const local = filesUnder(join(cwd, 'targon-out', id))
    expect(local).toEqual([{name: 'out/a.txt', size: 6}])
    expect(local.reduce((sum, file) => sum + file.size, 0)).toBeLessThanOrEqual(BOUND)
  })

  it('a failing job whose fetch stopped at the bound says both: its exit code, and in the hint the fetch', async () => {
    const run = await targon(['run', vm.name, '--no-sync', '--out', 'out', '--json', '--', `${SPARSE}; exit 3`], {
      cwd: tempDir('targon-fb-fail-'),
    })
    expect(run.code, run.stdout + run.stderr).toBe(12)
    const doc = parseJson(run)
    expect(doc.error.code).toBe('REMOTE_COMMAND_FAILED')
    expect(doc.error.message).toContain('failed: exit code 3')
    expect(doc.error.hint).toContain('the output out was not fetched: the fetch stopped at its bound of 1M')
  })

  it('jobs fetch and jobs wait stop there too, and take the paths from the record kept here, not from the VM', async () => {
    const id = await endedJob(`${SPARSE}; mkdir -p other; echo secret >other/b`, 'out')
    // The VM's record of the job now names other paths: they are not fetched.
    expect(await onVm(`sed -i 's/"out":\\["out"\\]/"out":["other"]/' /home/ubuntu/.targon/jobs/${id}/job.json`)).toBe(0)
    expect(simulated.farm.vm(vm.uid).readFile(`/home/ubuntu/.targon/jobs/${id}/job.json`)).toContain('"out":["other"]')
    const cwd = tempDir('targon-fb-fetch-')
    const fetched = await targon(['jobs', 'fetch', id, '--vms', vm.name, '--json'], {cwd})
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(12)
    const doc = parseJson(fetched)
    expect(doc.error.code).toBe('COPY_FAILED')
    expect(doc.error.message).toContain(`--out out of job ${id} was not fetched: the fetch stopped at its bound of 1M`)
    expect(doc.error.hint).toContain(`what came is in targon-out/${id}/`)
    expect(doc.data.fetch.copied).toEqual(['out/a.txt'])
    expect(filesUnder(join(cwd, 'targon-out'))).toEqual([{name: `${id}/out/a.txt`, size: 6}])

    // jobs wait on the ended job fetches as run does: the same bound, from the same record.
    const waitDir = tempDir('targon-fb-wait-')
    const waited = await targon(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd: waitDir})
    expect(waited.code, waited.stdout + waited.stderr).toBe(12)
    expect(parseJson(waited).error.message).toContain(
      `job ${id} succeeded, but --out out was not fetched: the fetch stopped at its bound of 1M`,
    )
    expect(filesUnder(join(waitDir, 'targon-out'))).toEqual([{name: `${id}/out/a.txt`, size: 6}])
  })
})

describe('a VM that answers for another job', () => {
  it('is refused by jobs fetch and jobs wait: exit 5, nothing written under targon-out', async () => {
    const asked = await endedJob('mkdir -p mine; echo asked >mine/a', 'mine')
    const other = await endedJob('mkdir -p theirs; echo other >theirs/a', 'theirs')
    // A login shell that swaps the asked id for the other one in every command it runs.
    const rig = [
      "printf '%s\\n' '#!/bin/bash' 'if [ \"$1\" = -c ]; then exec /bin/bash -c \"${2//ASKED/OTHER}\"; fi' 'exec /bin/bash \"$@\"'",
      `| sed "s/ASKED/${asked}/; s/OTHER/${other}/" | sudo tee /usr/local/bin/rigged-shell >/dev/null`,
      '&& sudo chmod 755 /usr/local/bin/rigged-shell',
      "&& sudo sed -i 's#^\\(ubuntu:.*:\\)[^:]*$#\\1/usr/local/bin/rigged-shell#' /etc/passwd",
    ].join(' ')
    expect(await onVm(rig)).toBe(0)
    try {
      expect(simulated.farm.vm(vm.uid).readFile('/etc/passwd')).toMatch(/^ubuntu:.*:\/usr\/local\/bin\/rigged-shell$/m)
      for (const command of ['fetch', 'wait']) {
        const cwd = tempDir('targon-fb-other-')
        const result = await targon(['jobs', command, asked, '--vms', vm.name, '--json'], {cwd})
        expect(result.code, result.stdout + result.stderr).toBe(5)
        const doc = parseJson(result)
        expect(doc.error.code).toBe('BAD_RESPONSE')
        expect(doc.error.message).toBe(`${vm.name} answered for job ${other} when asked for job ${asked}: refused`)
        expect(existsSync(join(cwd, 'targon-out'))).toBe(false)
      }
    } finally {
      expect(await onVm("sudo sed -i 's#^\\(ubuntu:.*:\\)/usr/local/bin/rigged-shell$#\\1/bin/bash#' /etc/passwd")).toBe(0)
    }
  })
})

describe('a file name with a line break', () => {
  it('is printed escaped by jobs fetch, on the line of its file: no line of output is forged', async () => {
    const id = await endedJob(`mkdir -p names; echo x >"names/ok.txt"$'\\n'"FORGED: deleted everything"`, 'names')
    const cwd = tempDir('targon-fb-name-')
    const fetched = await targon(['jobs', 'fetch', id, '--vms', vm.name], {cwd})
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0)
    expect(fetched.stdout, fetched.stderr).toBe(`targon-out/${id}/names/ok.txt\\nFORGED: deleted everything\n`)
    expect(readdirSync(join(cwd, 'targon-out', id, 'names'))).toEqual(['ok.txt\nFORGED: deleted everything'])
  })
})
