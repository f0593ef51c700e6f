/**
 * `targon jobs`, and the jobs of run --detach and run --down, on simulated VMs that are real SSH hosts (needs root):
 * listing, waiting, fetching and cancelling; sweeps and deletions that meet jobs; the job store; run renting its VM.
 */
import type {ChildProcess} from 'node:child_process'
import {cpSync, existsSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {type CliOptions, errorLines, parseJson, signalWhen, tempDir, waitFor} from '../helpers/cli.js'
import {parseEvents} from '../helpers/events.js'
import {useWebhook} from '../helpers/webhook.js'
import {project, useJobVms} from './job-vms.js'

const {billing, configDir, jobsOn, onVm, rentBare, simulated, targon} = useJobVms()

describe('targon jobs', () => {
  it('lists, shows, waits for, fetches and cancels jobs; an interrupted run leaves its job running, or with --down deletes its VM', async () => {
    const vm = await rentBare('jobs')
    const dir = project()
    // A job that waits for a file the test makes, then writes its output.
    const gated = 'echo waiting; while [ ! -e go ]; do sleep 0.2; done; echo finished; mkdir -p out; echo result >out/r.txt'
    let child: ChildProcess | undefined
    const interrupted = targon(['run', vm.name, '--out', 'out', '--json', '--', gated], {cwd: dir, onSpawn: (spawned) => (child = spawned)})
    await waitFor(
      () => jobsOn(vm.uid).length === 1 && simulated.farm.vm(vm.uid).readFile(`/home/ubuntu/.targon/jobs/${jobsOn(vm.uid)[0]}/log`) !== '',
      60_000,
    )
    const [id] = jobsOn(vm.uid) as [string]
    child?.kill('SIGINT')
    const stopped = await interrupted
    expect(stopped.code).toBe(130)
    const stoppedDoc = parseJson(stopped)
    expect(stoppedDoc.error.message).toContain(`job ${id} still runs`)
    expect(stoppedDoc.error.hint).toContain(`targon jobs wait ${id}`)
    expect(stoppedDoc.data.job).toMatchObject({id, state: 'running'})

    const listed = await targon(['jobs', '--vms', vm.name, '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    expect(parseJson(listed).data).toEqual({
      jobs: [
        expect.objectContaining({
          command: gated,
          down: false,
          down_pending: false,
          exit_code: null,
          id,
          state: 'running',
          vm: {name: vm.name, uid: vm.uid},
        }),
      ],
      unreadable: [],
    })
    const logs = await targon(['jobs', 'logs', id, '--vms', vm.name])
    expect(logs.code, logs.stderr).toBe(0)
    expect(logs.stdout).toBe('waiting\n')

    // jobs wait picks it up: follows to the end, fetches --out, exits as run would.
    const waiting = targon(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd: dir})
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const workdir: string = stoppedDoc.data.job.workdir
    expect((await onVm(vm.name, `touch ${workdir}/go`)).code).toBe(0)
    const waited = await waiting
    expect(waited.code, waited.stdout + waited.stderr).toBe(0)
    expect(parseJson(waited).data).toMatchObject({exit_code: 0, job: {id, state: 'succeeded'}, tail: ['waiting', 'finished']})
    expect(readFileSync(join(dir, 'targon-out', id, 'out', 'r.txt'), 'utf8')).toBe('result\n')
    // And again, for the outputs alone.
    const fetched = await targon(['jobs', 'fetch', id, '--vms', vm.name, '--json'], {cwd: tempDir('targon-elsewhere-')})
    expect(fetched.code, fetched.stderr).toBe(0)
    expect(parseJson(fetched).data.fetch).toMatchObject({copied: ['out/r.txt'], destination: `targon-out/${id}/`})

    // A job cancelled: its unit stopped, its log kept; listed as cancelled; a second cancel changes nothing.
    const sleeper = targon(['run', vm.name, '--no-sync', '--', 'echo started; sleep 300'], {cwd: dir})
    await waitFor(() => jobsOn(vm.uid).length === 2, 60_000)
    const other = jobsOn(vm.uid).find((each) => each !== id) as string
    await waitFor(() => simulated.farm.vm(vm.uid).readFile(`/home/ubuntu/.targon/jobs/${other}/log`) !== '', 30_000)
    const cancel = await targon(['jobs', 'cancel', other, '--vms', vm.name, '--json'])
    expect(cancel.code, cancel.stderr).toBe(0)
    expect(parseJson(cancel).data).toMatchObject({cancelled: true, job: {id: other, state: 'cancelled'}})
    const ended = await sleeper
    expect(ended.code).toBe(12)
    expect(ended.stderr).toContain('it was cancelled')
    expect((await onVm(vm.name, 'pgrep -x sleep || echo none')).stdout).toBe('none')
    const again = await targon(['jobs', 'cancel', other, '--vms', vm.name, '--json'])
    expect(parseJson(again).data).toMatchObject({cancelled: false, job: {state: 'cancelled'}})
    expect((await targon(['jobs', 'logs', other, '--vms', vm.name])).stdout).toBe('started\n')

    // Interrupted with --down: the job is cancelled, its outputs fetched, and its VM deleted.
    const doomed = await rentBare('doomed')
    let downChild: ChildProcess | undefined
    const withDown = targon(
      ['run', doomed.name, '--down', '--out', 'out', '--json', '--', 'mkdir -p out; echo partial >out/p.txt; echo up; sleep 300'],
      {
        cwd: dir,
        onSpawn: (spawned) => (downChild = spawned),
      },
    )
    await waitFor(
      () =>
        jobsOn(doomed.uid).length === 1 &&
        simulated.farm.vm(doomed.uid).readFile(`/home/ubuntu/.targon/jobs/${jobsOn(doomed.uid)[0]}/log`) !== '',
      60_000,
    )
    downChild?.kill('SIGINT')
    const downed = await withDown
    expect(downed.code, downed.stdout + downed.stderr).toBe(130)
    const downedDoc = parseJson(downed)
    expect(downedDoc.error.message).toMatch(/cancelled, .* deleted$/)
    expect(downedDoc.data).toMatchObject({deleted: [{action: 'deleted', billing: false, uid: doomed.uid}], job: {state: 'cancelled'}})
    expect(readFileSync(join(dir, 'targon-out', downedDoc.data.job.id, 'out', 'p.txt'), 'utf8')).toBe('partial\n')
    expect(billing().has(doomed.uid)).toBe(false)

    // A failed job, in the text table.
    expect((await targon(['run', vm.name, '--no-sync', '--', 'exit 3'])).code).toBe(12)
    const table = await targon(['jobs', '--vms', vm.name])
    expect(table.code, table.stderr).toBe(0)
    const rows = table.stdout.trimEnd().split('\n')
    expect(rows[0]).toBe('ID\tVM\tSTATE\tSTARTED\tDURATION\tDOWN\tCOMMAND')
    expect(rows.map((row) => row.split('\t')[2])).toEqual(['STATE', 'succeeded', 'cancelled', 'failed (3)'])

    // Ids that no VM has, or that no job can have.
    for (const bad of ['j-20990101-000000-abcdef', '../etc']) {
      const missing = await targon(['jobs', 'logs', bad, '--vms', vm.name])
      expect(missing.code, missing.stderr).toBe(4)
      expect(errorLines(missing.stderr)).toHaveLength(1)
    }
  })
})

describe('run --detach', () => {
  it('returns once the job has started; with --down, down --jobs-done deletes the VM once it has ended, outputs first', async () => {
    const vm = await rentBare('detached')
    const dir = project()
    const started = await targon(
      [
        'run',
        vm.name,
        '--detach',
        '--down',
        '--out',
        'out',
        '--json',
        '--',
        'while [ ! -e go ]; do sleep 0.2; done; mkdir -p out; echo r >out/r.txt',
      ],
      {cwd: dir},
    )
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const doc = parseJson(started)
    const id: string = doc.data.job.id
    expect(doc.data).toMatchObject({exit_code: null, job: {down: true, id, state: 'running'}, tail: []})
    expect(doc.warnings.join('\n')).toContain('no guard covers this config directory')

    // While it runs, the VM is kept, and listed with --down pending.
    const early = await targon(['down', '--jobs-done', '--fleet', 'detached', '--json'])
    expect(early.code, early.stdout + early.stderr).toBe(0)
    expect(parseJson(early).data).toMatchObject({kept: [{reason: `busy: job ${id}`, state: 'busy', uid: vm.uid}], results: []})
    expect(parseJson(await targon(['jobs', '--vms', vm.name, '--json'])).data.jobs).toEqual([
      expect.objectContaining({down_pending: true, id}),
    ])
    expect(billing().has(vm.uid)).toBe(true)

    expect((await onVm(vm.name, `touch ${doc.data.job.workdir}/go`)).code).toBe(0)
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    const done = await targon(['down', '--jobs-done', '--fleet', 'detached', '--json'])
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid: vm.uid})])
    expect(billing().has(vm.uid)).toBe(false)
    // Its outputs were kept in the config directory's job store before the deletion.
    expect(readFileSync(join(configDir, 'jobs', id, 'out', 'out', 'r.txt'), 'utf8')).toBe('r\n')
    // From there, jobs fetch copies them once the VM is gone.
    const elsewhere = tempDir('targon-fetch-')
    const fetched = await targon(['jobs', 'fetch', id, '--json'], {cwd: elsewhere})
    expect(fetched.code, fetched.stdout + fetched.stderr).toBe(0)
    expect(parseJson(fetched).data).toMatchObject({fetch: {copied: ['out/r.txt']}, job: {id, state: 'succeeded'}, vm: {uid: vm.uid}})
    expect(readFileSync(join(elsewhere, 'targon-out', id, 'out', 'r.txt'), 'utf8')).toBe('r\n')

    const refused = await targon(['down', '--jobs-done', vm.name])
    expect(refused.code).toBe(2)
  })

  it('with --down from a config directory that holds no record of the VM, says that no sweep from there deletes it', async () => {
    const vm = await rentBare('norecord')
    const other = tempDir('targon-config-')
    cpSync(join(configDir, 'keys'), join(other, 'keys'), {recursive: true})
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'true'], {
      env: {TARGON_CONFIG_DIR: other},
    })
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    expect(parseJson(started).warnings.join('\n')).toContain(`holds no record of ${vm.name}: no sweep from it deletes the VM`)
    expect(parseJson(started).warnings.join('\n')).toContain(`targon jobs wait ${id}`)
  })

  it('a sweep deletes the VM of a detached --down job started from its directory once the job has ended', async () => {
    const vm = await rentBare('swept')
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'sleep 8'])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    const early = await targon(['sweep', '--fleet', 'swept', '--json'])
    expect(early.code, early.stdout + early.stderr).toBe(0)
    expect(parseJson(early).data.kept).toEqual([expect.objectContaining({reason: `busy: job ${id}`, uid: vm.uid})])
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    const swept = await targon(['sweep', '--fleet', 'swept', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results, swept.stdout).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
  })
  it('a sweep from another config directory finds the --down job on the VM when its idle probe reads it', async () => {
    const vm = await rentBare('elsewhere')
    const started = await targon(['run', vm.name, '--detach', '--down', '--no-sync', '--json', '--', 'sleep 1'])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    // The guard's directory holds the project key and the host pins, but no record of the VM or its job.
    const guardDir = tempDir('targon-guard-')
    for (const held of ['keys', 'known_hosts.d', 'config.json'])
      if (existsSync(join(configDir, held))) cpSync(join(configDir, held), join(guardDir, held), {recursive: true})
    const env = {TARGON_CONFIG_DIR: guardDir}
    // Without an idle limit nothing probes the VM, so nothing here knows of its job.
    const unprobed = await targon(['sweep', '--fleet', 'elsewhere', '--json'], {env})
    expect(unprobed.code, unprobed.stdout + unprobed.stderr).toBe(0)
    expect(parseJson(unprobed).data.results).toEqual([])
    const swept = await targon(['sweep', '--fleet', 'elsewhere', '--idle-limit', '1h', '--json'], {env})
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
    expect(existsSync(join(guardDir, 'jobs', id, 'job.json'))).toBe(true)
  })
})

describe('run --down whose follow ends early', () => {
  it('a sweep deletes the VM once the job has ended, when the run itself was killed while following', async () => {
    const vm = await rentBare('orphaned')
    const killed = await targon(['run', vm.name, '--down', '--no-sync', '--json', '--', 'sleep 3'], {
      onSpawn: signalWhen(() => jobsOn(vm.uid).length > 0, 'SIGKILL', 500),
    })
    expect(killed.code, killed.stdout + killed.stderr).not.toBe(0)
    const [id] = jobsOn(vm.uid)
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    expect(billing().has(vm.uid)).toBe(true)
    const swept = await targon(['sweep', '--fleet', 'orphaned', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    expect(parseJson(swept).data.results).toEqual([
      expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid}),
    ])
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('an interrupt while the outputs come home still deletes the VM, as --down asked', async () => {
    const vm = await rentBare('fetchint')
    const dir = tempDir('targon-project-')
    const make = 'mkdir -p big && for i in 1 2 3 4; do head -c 50M /dev/zero >big/$i; done'
    const result = await targon(['run', vm.name, '--down', '--no-sync', '--out', 'big', '--json', '--', make], {
      cwd: dir,
      onSpawn: signalWhen(() => existsSync(join(dir, 'targon-out'))),
    })
    expect(result.code, result.stdout + result.stderr).toBe(130)
    const doc = parseJson(result)
    expect(doc.data.job).toMatchObject({down: true, state: 'succeeded'})
    expect(doc.data.deleted).toEqual([expect.objectContaining({action: 'deleted', uid: vm.uid})])
    expect(billing().has(vm.uid)).toBe(false)
  })
})

describe('a deletion names the jobs it ends', () => {
  it('down NAME names the running job (a dry run too), in its result, its event and its line; an unreachable VM is deleted all the same', async () => {
    const vm = await rentBare('ended')
    // A command with a control character: the VM's text is escaped on the terminal, exact in JSON.
    const command = "sleep 300; echo '\u001b[2J'"
    const started = await targon(['run', vm.name, '--detach', '--no-sync', '--json', '--', command])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    const job = {command: parseJson(started).data.job.command as string, id}
    expect(job.command).toBe(command)

    const dry = await targon(['down', vm.name, '--dry-run', '--json'])
    expect(dry.code, dry.stdout + dry.stderr).toBe(0)
    expect(parseJson(dry).data.results).toEqual([{action: 'would-delete', billing: true, ended_jobs: [job], name: vm.name, uid: vm.uid}])

    const eventsFile = join(tempDir('targon-events-'), 'events.ndjson')
    const down = await targon(['down', vm.name, '--json', '--verbose', '--events-file', eventsFile])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(parseJson(down).data.results).toEqual([{action: 'deleted', billing: false, ended_jobs: [job], name: vm.name, uid: vm.uid}])
    expect(down.stderr).toContain(`deleted: ${vm.name} (${vm.uid}); ended job ${id} (sleep 300; echo '\\x1b[2J')`)
    const done = parseEvents(readFileSync(eventsFile, 'utf8')).filter((event) => event.type === 'deletion' && event.status === 'done')
    expect(done).toEqual([expect.objectContaining({ended_jobs: [job], vm: {index: null, name: vm.name, uid: vm.uid}})])
    expect(done[0]?.detail).toContain(`ended job ${id}`)
    expect(billing().has(vm.uid)).toBe(false)

    // A VM whose sshd is gone: its jobs cannot be read, which is said, and it is deleted all the same.
    const lost = await rentBare('ended')
    const other = await targon(['run', lost.name, '--detach', '--no-sync', '--json', '--', 'sleep 300'])
    expect(other.code, other.stdout + other.stderr).toBe(0)
    await simulated.farm.stopVm(lost.uid)
    const unreachable = await targon(['down', lost.name, '--json'])
    expect(unreachable.code, unreachable.stdout + unreachable.stderr).toBe(0)
    expect(parseJson(unreachable).data.results).toEqual([
      {action: 'deleted', billing: false, ended_jobs: null, name: lost.name, uid: lost.uid},
    ])
    expect(parseJson(unreachable).warnings.join('\n')).toContain(`the jobs of 1 VM could not be read (${lost.name}:`)
    expect(billing().has(lost.uid)).toBe(false)
  })
})

describe('the job store of down --jobs-done and the sweep', () => {
  const hook = useWebhook()
  const storeDir = tempDir('targon-config-store-')
  const inStore = (args: string[], options: CliOptions = {}) =>
    targon(args, {...options, env: {TARGON_CONFIG_DIR: storeDir, TARGON_NOTIFY_URL: hook.url, ...options.env}})
  const received = () => hook.received.filter((each) => each.body?.targon?.event === 'fetch-failing')

  /** A detached --down job on a new VM of `fleet` (`extra`: up's limits), ended: its id and the VM. */
  async function endedJob(fleet: string, extra: string[], out: string, command: string) {
    const up = await inStore(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, ...extra, '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]
    const started = await inStore(['run', vm.name, '--detach', '--down', '--no-sync', '--out', out, '--json', '--', command])
    expect(started.code, started.stdout + started.stderr).toBe(0)
    const id: string = parseJson(started).data.job.id
    await waitFor(() => simulated.farm.vm(vm.uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
    return {id, vm}
  }

  it('stops a fetch at the bound: the VM is kept and billing, the failure notified once, and fetched whole once the bound allows', async () => {
    expect((await inStore(['config', 'set', 'job-store-limit', '2M'])).code).toBe(0)
    const {id, vm} = await endedJob(
      'bound',
      ['--ttl', '2h'],
      'out',
      'mkdir -p out; for i in 1 2 3; do head -c 1048576 /dev/urandom >out/f$i; done',
    )
    const out = join(storeDir, 'jobs', id, 'out', 'out')

    const first = await inStore(['down', '--jobs-done', '--fleet', 'bound', '--json'])
    expect(first.code, first.stdout + first.stderr).toBe(0)
    const doc = parseJson(first)
    expect(doc.data.results).toEqual([])
    expect(doc.data.kept).toEqual([expect.objectContaining({state: 'unreadable', uid: vm.uid})])
    expect(doc.data.kept[0].reason).toContain('the fetch stopped at its bound of 2M, the job-store-limit setting')
    // To paste as it is: the store's config directory and the VM's fleet.
    expect(doc.data.kept[0].reason).toContain(`fetch by hand: TARGON_CONFIG_DIR=${storeDir} targon jobs fetch ${id} --fleet bound`)
    expect(doc.warnings.join('\n')).toContain('their --ttl, --max-cost and idle limits still apply')
    expect(billing().has(vm.uid)).toBe(true)
    // What came is kept, whole; nothing past the bound was written, and the job is not in the store as fetched.
    expect(readdirSync(out).sort()).toEqual(['f1', 'f2'])
    expect(readFileSync(join(out, 'f2'))).toHaveLength(1048576)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)
    const notices = received()
    expect(notices).toHaveLength(1)
    expect(notices[0]?.body.targon).toMatchObject({event: 'fetch-failing', exit_code: 0, vms: [{name: vm.name, uid: vm.uid}]})
    expect(notices[0]?.body.text).toContain(`the outputs of job ${id} on ${vm.name} could not be fetched`)
    expect(notices[0]?.body.text).toContain('its TTL')
    expect(notices[0]?.body.text).toContain(`targon down ${vm.name}`)

    // The next sweep keeps it again, without a second notification.
    const again = await inStore(['sweep', '--fleet', 'bound', '--json'])
    expect(again.code, again.stdout + again.stderr).toBe(0)
    expect(parseJson(again).data.kept[0].reason).toContain('2 times in a row')
    expect(received()).toHaveLength(1)
    expect(billing().has(vm.uid)).toBe(true)

    // With room, the next one fetches it whole and deletes the VM.
    expect((await inStore(['config', 'set', 'job-store-limit', '10M'])).code).toBe(0)
    const done = await inStore(['down', '--jobs-done', '--fleet', 'bound', '--json'])
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid: vm.uid})])
    expect(readdirSync(out).sort()).toEqual(['f1', 'f2', 'f3'])
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(true)
    expect(existsSync(join(storeDir, 'jobs', id, 'failing.json'))).toBe(false)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('jobs wait on a --down job stores the outputs first: a fetch past the bound keeps the VM; once they come, ./targon-out has them and the VM goes', async () => {
    expect((await inStore(['config', 'set', 'job-store-limit', '2M'])).code).toBe(0)
    const {id, vm} = await endedJob(
      'waited',
      ['--ttl', '2h'],
      'out',
      'mkdir -p out; for i in 1 2 3; do head -c 1048576 /dev/urandom >out/f$i; done',
    )
    const cwd = tempDir('targon-wait-')
    const notified = received().length

    const kept = await inStore(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd})
    expect(kept.code, kept.stdout + kept.stderr).toBe(12)
    const keptDoc = parseJson(kept)
    expect(keptDoc.error.code).toBe('COPY_FAILED')
    expect(keptDoc.error.hint).toContain('the outputs stay on the VM')
    expect(keptDoc.data).toMatchObject({deleted: null, exit_code: 0, job: {id, state: 'succeeded'}})
    expect(keptDoc.warnings.join('\n')).toContain(`${vm.name} is kept and bills`)
    expect(received().length).toBe(notified + 1)
    expect(billing().has(vm.uid)).toBe(true)
    expect(existsSync(join(cwd, 'targon-out'))).toBe(false)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)

    expect((await inStore(['config', 'set', 'job-store-limit', '10M'])).code).toBe(0)
    const done = await inStore(['jobs', 'wait', id, '--vms', vm.name, '--json'], {cwd})
    expect(done.code, done.stdout + done.stderr).toBe(0)
    expect(parseJson(done).data).toMatchObject({deleted: [{action: 'deleted', billing: false, uid: vm.uid}], exit_code: 0})
    expect(readdirSync(join(cwd, 'targon-out', id, 'out')).sort()).toEqual(['f1', 'f2', 'f3'])
    expect(readFileSync(join(cwd, 'targon-out', id, 'out', 'f3'))).toEqual(readFileSync(join(storeDir, 'jobs', id, 'out', 'out', 'f3')))
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(true)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('deletes a VM under no limit whose fetch has failed 3 times over a day, without its outputs, and says so', async () => {
    const {id, vm} = await endedJob('nolimit', [], 'missing', 'true')
    const kept = await inStore(['sweep', '--fleet', 'nolimit', '--json'])
    expect(kept.code, kept.stdout + kept.stderr).toBe(0)
    expect(parseJson(kept).data.kept[0].reason).toContain('--out missing was not fetched')
    const notice = received().find((each) => each.body.text.includes(id))
    expect(notice?.body.text).toContain('it has no TTL, budget or idle limit')
    expect(billing().has(vm.uid)).toBe(true)

    // As if its fetch had failed since two days: the next failure is the third, and the VM goes.
    const failing = join(storeDir, 'jobs', id, 'failing.json')
    const record = JSON.parse(readFileSync(failing, 'utf8'))
    writeFileSync(failing, JSON.stringify({...record, failures: 2, first_failed_at: new Date(Date.now() - 2 * 86_400_000).toISOString()}))
    const swept = await inStore(['sweep', '--fleet', 'nolimit', '--json'])
    expect(swept.code, swept.stdout + swept.stderr).toBe(0)
    const doc = parseJson(swept)
    expect(doc.data.results).toEqual([expect.objectContaining({action: 'deleted', billing: false, reason: 'job-done', uid: vm.uid})])
    expect(doc.warnings.join('\n')).toContain(`deleting ${vm.name} without the outputs of job ${id}: their fetch failed 3 times`)
    expect(existsSync(join(storeDir, 'jobs', id, 'job.json'))).toBe(false)
    expect(billing().has(vm.uid)).toBe(false)
  })
})

describe('run renting its VM', () => {
  it('rents when the word names an offer (idle limit 30m), runs, fetches, deletes with --down: nothing left billing', async () => {
    const dir = project()
    const before = billing()
    const result = await targon(
      ['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--down', '--out', 'results', '--json', '--', 'bash train.sh'],
      {cwd: dir},
    )
    expect(result.code, result.stdout + result.stderr).toBe(0)
    const {data} = parseJson(result)
    expect(data).toMatchObject({deleted: [{action: 'deleted', billing: false}], exit_code: 0, job: {state: 'succeeded'}})
    expect(readFileSync(join(dir, 'targon-out', data.job.id, 'results', 'model.txt'), 'utf8')).toBe('model\n')
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])

    // Detached, without --down: the rented VM stays, with the idle limit run gives it.
    const detached = await targon([
      'run',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--fleet',
      'rented',
      '--detach',
      '--no-sync',
      '--json',
      '--',
      'true',
    ])
    expect(detached.code, detached.stdout + detached.stderr).toBe(0)
    const vm = parseJson(detached).data.vm as {name: string; uid: string}
    const record = JSON.parse(readFileSync(join(configDir, 'vms', 'acme', `${vm.name}.json`), 'utf8'))
    expect(record.idle_limit_s).toBe(1800)
    expect((await targon(['down', vm.name, '--json'])).code).toBe(0)

    // Ctrl-C while it rents: what it rented is deleted again.
    const known = new Set(simulated.sim.workloads.keys())
    const interrupted = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: signalWhen(() => [...simulated.sim.workloads.keys()].some((uid) => !known.has(uid))),
    })
    expect(interrupted.code, interrupted.stdout + interrupted.stderr).toBe(130)
    await waitFor(() => [...billing()].every((uid) => before.has(uid)), 30_000)

    // A VM labelled as an offer is named: the word names both, and run refuses before it rents or starts anything.
    const named = await targon([
      'up',
      'rtx6000b-small',
      '--name',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--no-bootstrap',
      '--fleet',
      'twin',
      '--json',
    ])
    expect(named.code, named.stdout + named.stderr).toBe(0)
    const twin = parseJson(named).data.vms[0] as {name: string; uid: string}
    const rentable = billing()
    const ambiguous = await targon(['run', 'rtx6000b-small', '--fleet', 'twin', '--max-price', '1.8', '--', 'true'])
    expect(ambiguous.code, ambiguous.stderr).toBe(2)
    expect(errorLines(ambiguous.stderr)).toEqual([expect.stringContaining(`rtx6000b-small names both the VM ${twin.name} and an offer`)])
    expect(ambiguous.stderr).toContain(`targon run ${twin.uid}`)
    expect(billing()).toEqual(rentable)
    expect(jobsOn(twin.uid)).toEqual([])
    // Without a price cap nothing can be rented: the word is the VM's.
    const onTwin = await targon(['run', 'rtx6000b-small', '--fleet', 'twin', '--no-sync', '--json', '--', 'true'])
    expect(onTwin.code, onTwin.stdout + onTwin.stderr).toBe(0)
    expect(parseJson(onTwin).data.vm).toEqual({name: twin.name, uid: twin.uid})
    expect((await targon(['down', twin.uid, '--json'])).code).toBe(0)

    // A word that names neither a VM nor an offer: refused, nothing rented.
    const neither = await targon(['run', 'nosuchthing', '--max-price', '1.8', '--', 'true'])
    expect(neither.code, neither.stderr).toBe(2)
    expect(errorLines(neither.stderr)).toHaveLength(1)
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])
  })

  it('deletes what it rented when the new VM cannot be looked up: interrupted there, or hidden from the listing', async () => {
    const before = billing()
    const listings = () => simulated.sim.log.filter((entry) => entry.method === 'GET' && /\/workloads$/.test(entry.path)).length
    /** Once the VM being rented runs (up bootstraps it, reading no listing), `onRunning` is called once. */
    const whenRunning = (onRunning: () => void) => {
      const known = new Set(simulated.sim.workloads.keys())
      const timer = setInterval(() => {
        if (![...simulated.sim.workloads.values()].some((each) => !known.has(each.uid) && each.status === 'running')) return
        clearInterval(timer)
        onRunning()
      }, 20)
      return timer
    }

    // Ctrl-C while run looks up the VM that up has just rented: that listing is held until the interrupt has come.
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const interrupted = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: (child) => {
        let seen = Number.POSITIVE_INFINITY
        const timer = whenRunning(() => {
          seen = listings()
          simulated.sim.inject({holdUntil: held, method: 'GET', path: /\/workloads$/, times: 1})
        })
        const asked = setInterval(() => {
          if (listings() <= seen) return
          clearInterval(asked)
          child.kill('SIGINT')
          setTimeout(release, 500)
        }, 20)
        child.on('close', () => {
          clearInterval(timer)
          clearInterval(asked)
          release()
        })
      },
    })
    expect(interrupted.code, interrupted.stdout + interrupted.stderr).toBe(130)
    expect(parseJson(interrupted).data.deleted).toEqual([expect.objectContaining({action: 'deleted', billing: false})])
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])

    // The first listing after the rent does not show the new VM yet: the run fails, and deletes it all the same.
    const hidden = await targon(['run', 'rtx6000b-small', '--max-price', '1.8', '--fleet', 'rented', '--json', '--', 'true'], {
      onSpawn: (child) => {
        const timer = whenRunning(() =>
          simulated.sim.inject({
            body: JSON.stringify({items: [], next_cursor: null}),
            method: 'GET',
            path: /\/workloads$/,
            status: 200,
            times: 1,
          }),
        )
        child.on('close', () => clearInterval(timer))
      },
    })
    expect(hidden.code, hidden.stdout + hidden.stderr).not.toBe(0)
    expect(parseJson(hidden).data.deleted).toEqual([expect.objectContaining({action: 'deleted', billing: false})])
    expect([...billing()].filter((uid) => !before.has(uid))).toEqual([])
  })
})
