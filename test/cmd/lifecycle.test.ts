import {execFile, execFileSync} from 'node:child_process'
import {existsSync, lstatSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {BIN, CONFIG_FILE_VARIANTS, baseEnv, parseJson, tempDir} from '../helpers/cli.js'
import {expectOneRunInOrder, parseEvents} from '../helpers/events.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {simulatorEnv} from '../helpers/simulator.js'
import {REAL_CLOCK} from '../../src/lib/core/clock.js'

const ctx = useFreshFixture({inProcess: true})
const {setup, targon} = ctx

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

function liveNames(): string[] {
  return ctx.sim
    .live()
    .map((workload) => workload.name)
    .sort()
}

function billingNames(): string[] {
  return ctx.sim
    .billing()
    .map((workload) => workload.name)
    .sort()
}

/** Registered workloads left behind: Targon refuses to delete them (500) and they do not run. */
function registeredUids(): string[] {
  return ctx.sim
    .live()
    .filter((workload) => workload.status === 'registered')
    .map((workload) => workload.uid)
    .sort()
}

/**
 * Runs targon on a real pseudo-terminal (stdin, stdout and stderr); `answer` is typed once `prompt` shows, or, for a
 * signal, sent to the targon process itself (as kill -INT from another terminal does).
 */
function onTerminal(args: string[], answer: string, prompt = '[y/N]'): Promise<{code: number | null; output: string}> {
  return new Promise((resolve) => {
    const child = execFile(
      'python3',
      ['-c', 'import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)', process.execPath, BIN, ...args],
      {env: baseEnv(simulatorEnv(ctx.sim, {TARGON_CONFIG_DIR: ctx.configDir}))},
      () => {},
    )
    let output = ''
    let typed = false
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (!typed && output.includes(prompt)) {
        typed = true
        if (!answer.startsWith('SIG')) child.stdin?.write(answer)
        // pty.spawn forks targon as the only child of python.
        else process.kill(Number(execFileSync('pgrep', ['-P', String(child.pid)], {encoding: 'utf8'}).trim()), answer)
      }
    })
    child.on('close', (code) => resolve({code, output}))
  })
}

describe('up, status, down', () => {
  it('rents a VM under the cap, shows it, and deletes it again', async () => {
    await setup()
    const up = await targon([...UP, '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    expect(up.stderr).toBe('')
    const vm = parseJson(up).data.vms[0]
    expect(parseJson(up).data.owner).toBeNull()
    expect(vm).toMatchObject({
      adopted: false,
      fleet: 'default',
      gpu_count: 1,
      gpu_model: 'RTX-PRO-6000B',
      max_price: 1.8,
      price_per_hour: 1.69,
      public_ip: '127.0.0.1',
      resource: 'rtx6000b-small',
      ssh_port: 22,
      status: 'running',
      user: 'ubuntu',
    })
    expect(vm.name).toMatch(/^tcli-default-[a-z0-9]{8}$/)
    expect(vm.phases.map((phase: {name: string; status: string}) => `${phase.name}:${phase.status}`)).toEqual([
      'register:done',
      'deploy:done',
      'wait-running:done',
    ])
    expect(ctx.sim.live().map((workload) => [workload.uid, workload.status])).toEqual([[vm.uid, 'running']])

    // What was sent: a VM with our key uid and a strong password, stored 0600 and never printed.
    const workload = ctx.sim.workloads.get(vm.uid)!
    expect(workload.password).toMatch(/^[A-Za-z0-9]{24}$/)
    expect(workload.ssh_keys).toHaveLength(1)
    expect(up.stdout).not.toContain(workload.password)
    const record = join(ctx.configDir, 'vms', 'acme', `${vm.name}.json`)
    expect(statSync(record).mode & 0o777).toBe(0o600)
    expect(statSync(join(ctx.configDir, 'keys', 'id_ed25519')).mode & 0o777).toBe(0o600)
    expect(statSync(ctx.configDir).mode & 0o777).toBe(0o700)

    const status = parseJson(await targon(['status', '--json']))
    expect(status.data.vms).toHaveLength(1)
    expect(status.data.vms[0]).toMatchObject({
      local_record: 'present',
      name: vm.name,
      origin: 'this-tool',
      price_per_hour: 1.69,
      status: 'running',
      uid: vm.uid,
    })
    expect(status.data.drift).toEqual([])

    const down = await targon(['down', '--all', '--json'])
    expect(down.code).toBe(0)
    expect(parseJson(down).data).toMatchObject({results: [{action: 'deleted', name: vm.name, uid: vm.uid}], survivors: []})
    expect(liveNames()).toEqual([])
    expect(existsSync(record)).toBe(false)
    expect(ctx.sim.billableSeconds(vm.uid)).toBeGreaterThan(0)
  })

  it('exits 9 and creates nothing when no offer is under the cap, naming the cheapest', async () => {
    await setup()
    const result = await targon(['up', '--gpu', 'h200', '--max-price', '1', '--json'])
    expect(result.code).toBe(9)
    const doc = parseJson(result)
    expect(doc.error).toMatchObject({code: 'PRICE_CAP_EXCEEDED', exit_code: 9})
    expect(doc.error.message).toContain('h200-small at 2.49 USD/h')
    expect(ctx.sim.requests('POST', '/workloads')).toHaveLength(0)
  })

  it('deletes a refused workload and deploys the next offer, paying for one', async () => {
    await setup({deleteLifecycle: 'ideal'})
    ctx.sim.inject({
      method: 'POST',
      path: '/deploy',
      status: 503,
      body: JSON.stringify({error: 'no capacity', reason: 'WORKLOAD_VM_NO_CAPACITY'}),
      times: 1,
    })
    const result = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(result.code, result.stdout).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms[0].resource).toBe('rtx6000b-small-b')
    expect(doc.warnings.join(' ')).toContain('refused')
    expect(ctx.sim.live().map((workload) => workload.resource_name)).toEqual(['rtx6000b-small-b'])
    expect(ctx.sim.workloads.size).toBe(2)
  })

  it('exits 10 when every offer refuses for capacity or credits; what Targon refuses to delete is named and does not bill', async () => {
    await setup()
    ctx.sim.inject({
      method: 'POST',
      path: '/deploy',
      status: 402,
      body: JSON.stringify({error: 'insufficient credits', reason: 'INSUFFICIENT_CREDITS'}),
    })
    const result = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json'])
    expect(result.code).toBe(10)
    const doc = parseJson(result)
    expect(doc.error.code).toBe('INSUFFICIENT_CREDITS')
    expect(billingNames()).toEqual([])
    expect(doc.data.leftovers.map((leftover: {uid: string}) => leftover.uid).sort()).toEqual(registeredUids())
    expect(registeredUids()).toHaveLength(2)
  })

  it('reconciles a lost create answer by name instead of creating twice', async () => {
    await setup()
    ctx.sim.inject({dropAfterCommit: true, method: 'POST', path: /\/workloads$/, times: 1})
    const result = await targon([...UP, '--json'])
    expect(result.code, result.stdout).toBe(0)
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(1)
    expect(ctx.sim.live()).toHaveLength(1)
    expect(parseJson(result).data.vms[0].uid).toBe(ctx.sim.live()[0]?.uid)
  })

  it('cleans up and exits 5 when the VM turns to error while waiting', async () => {
    await setup({provisioning: 'error'})
    const result = await targon([...UP, '--json'])
    expect(result.code).toBe(5)
    const doc = parseJson(result)
    expect(doc.error.message).toContain('error')
    expect(doc.data.cleanup).toMatchObject({attempted: true, survivors: []})
    expect(liveNames()).toEqual([])
  })

  it('cleans up and exits 6 when the VM never runs within --timeout', async () => {
    await setup({provisioning: 'stuck'})
    const result = await targon([...UP, '--timeout', '3s', '--json'])
    expect(result.code).toBe(6)
    expect(parseJson(result).error).toMatchObject({code: 'TIMEOUT'})
    expect(liveNames()).toEqual([])
  })

  it('keeps a failed VM with --on-failure keep', async () => {
    await setup({provisioning: 'error'})
    const result = await targon([...UP, '--on-failure', 'keep', '--json'])
    expect(result.code).toBe(5)
    expect(ctx.sim.live()).toHaveLength(1)
  })

  it('deletes the workload and exits 9 when the server price is above the cap', async () => {
    await setup({priceDrift: 0.2})
    const result = await targon([...UP, '--json'])
    expect(result.code).toBe(9)
    expect(parseJson(result).error.message).toContain('1.89 USD/h, above the cap 1.80')
    expect(ctx.sim.requests('POST', '/deploy')).toHaveLength(0)
    expect(billingNames()).toEqual([])
    expect(parseJson(result).data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual(registeredUids())
  })

  it('--count 3 is all-or-nothing: one failure rolls back the others and exits 11', async () => {
    await setup({provisioning: (workload) => (workload.deployIndex === 1 ? 'error' : 'normal')})
    const result = await targon([...UP, '--count', '3', '--json'])
    expect(result.code).toBe(11)
    const doc = parseJson(result)
    expect(doc.error.code).toBe('PARTIAL_FAILURE')
    expect(doc.data.failed).toHaveLength(1)
    expect(liveNames()).toEqual([])
    expect(ctx.sim.workloads.size).toBe(3)
  })

  it('--count 3 --min 2 keeps the partial fleet and says which VM failed', async () => {
    await setup({provisioning: (workload) => (workload.deployIndex === 1 ? 'error' : 'normal')})
    const result = await targon([...UP, '--count', '3', '--min', '2', '--json'])
    expect(result.code, result.stdout).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.vms).toHaveLength(2)
    expect(doc.data.failed).toHaveLength(1)
    expect(
      ctx.sim
        .live()
        .map((workload) => workload.uid)
        .sort(),
    ).toEqual(doc.data.vms.map((vm: {uid: string}) => vm.uid).sort())
  })

  for (const variant of CONFIG_FILE_VARIANTS)
    it(`SIGINT during wait-running deletes what the run created and exits 130 (${variant.label})`, async () => {
      await setup({provisioning: 'stuck'})
      variant.prepare(ctx.configDir)
      const result = await targon([...UP, '--json'], {
        inProcess: false,
        onSpawn(child) {
          const timer = setInterval(() => {
            if (ctx.sim.live().some((workload) => workload.status === 'provisioning')) {
              clearInterval(timer)
              child.kill('SIGINT')
            }
          }, 50)
        },
      })
      expect(result.code).toBe(130)
      expect(parseJson(result).error).toMatchObject({code: 'INTERRUPTED', exit_code: 130})
      expect(liveNames()).toEqual([])
    })

  it('up --name adopts the existing VM instead of creating a second one', async () => {
    await setup()
    const first = parseJson(await targon([...UP, '--name', 'worker1', '--json']))
    const second = await targon([...UP, '--name', 'worker1', '--json'])
    expect(second.code).toBe(0)
    const vm = parseJson(second).data.vms[0]
    expect(vm).toMatchObject({adopted: true, name: 'tcli-default-worker1', uid: first.data.vms[0].uid})
    expect(vm.phases.map((phase: {status: string}) => phase.status)).toEqual(['skipped', 'skipped', 'skipped'])
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(1)
  })

  it("down --all from an empty config dir finds and deletes this tool's VMs only", async () => {
    await setup()
    expect((await targon([...UP, '--count', '2', '--json'])).code).toBe(0)
    ctx.sim.addWorkload({name: 'someone-elses-vm', status: 'running'})
    const fresh = tempDir('targon-fresh-')
    const down = await targon(['down', '--all', '--json'], {config: fresh})
    expect(down.code).toBe(0)
    expect(parseJson(down).data.results.map((result: {action: string}) => result.action)).toEqual(['deleted', 'deleted'])
    expect(liveNames()).toEqual(['someone-elses-vm'])
    expect(readdirSync(fresh)).not.toContain('vms')
  })

  it('down exits 11 with per-VM results when a deletion fails', async () => {
    await setup()
    const up = parseJson(await targon([...UP, '--count', '2', '--json']))
    const [keep, drop] = up.data.vms.map((vm: {uid: string}) => vm.uid)
    ctx.sim.inject({method: 'DELETE', path: keep, status: 403, body: JSON.stringify({error: 'forbidden', reason: 'FORBIDDEN'})})
    const down = await targon(['down', '--all', '--json'])
    expect(down.code).toBe(11)
    const doc = parseJson(down)
    expect(doc.error.code).toBe('PARTIAL_FAILURE')
    expect(doc.data.survivors).toEqual([keep])
    expect(doc.data.results.find((result: {uid: string}) => result.uid === drop).action).toBe('deleted')
    expect(ctx.sim.live().map((workload) => workload.uid)).toEqual([keep])
  })

  it('down --dry-run deletes nothing, and a second down finds nothing and exits 0', async () => {
    await setup()
    await targon([...UP, '--json'])
    const dry = parseJson(await targon(['down', '--all', '--dry-run', '--json']))
    expect(dry.data.results[0].action).toBe('would-delete')
    expect(ctx.sim.requests('DELETE', '/workloads')).toHaveLength(0)
    expect((await targon(['down', '--all'])).code).toBe(0)
    const again = await targon(['down', '--all', '--json'])
    expect(again.code).toBe(0)
    expect(parseJson(again).data.results).toEqual([])
  })

  it('down --all --json on a terminal asks first: --json is no consent', async () => {
    await setup()
    expect((await targon([...UP, '--json'])).code).toBe(0)
    const declined = await onTerminal(['down', '--all', '--json'], 'n\n')
    expect(declined.output).toContain('Delete 1 VM')
    expect(declined.code).toBe(2)
    expect(declined.output).toContain('"code": "USAGE"')
    expect(ctx.sim.billing()).toHaveLength(1)
    expect(ctx.sim.requests('DELETE', '/workloads')).toHaveLength(0)
    const confirmed = await onTerminal(['down', '--all', '--json', '--yes'], '')
    expect(confirmed.code).toBe(0)
    expect(ctx.sim.billing()).toEqual([])
  })

  it('Ctrl-C at a prompt is an interrupt: exit 130, the envelope, nothing deleted or stored', async () => {
    await setup()
    expect((await targon([...UP, '--json'])).code).toBe(0)
    const atDelete = await onTerminal(['down', '--all', '--json'], '\u0003')
    expect(atDelete.code).toBe(130)
    expect(atDelete.output).toContain('"code": "INTERRUPTED"')
    expect(atDelete.output).toContain('interrupted at the prompt; nothing was deleted')
    expect(ctx.sim.billing()).toHaveLength(1)
    const atKey = await onTerminal(['config', 'set', 'api-key'], 'tgn_half\u0003', 'Targon API key: ')
    expect(atKey.code).toBe(130)
    expect(atKey.output).toContain('Error: interrupted at the prompt; nothing was stored')
    expect(parseJson(await targon(['config', 'get', 'api-key', '--json'])).data.values.api_key).toBeNull()
    expect((await targon(['down', '--all', '--yes'])).code).toBe(0)
  })

  it('a signal sent while the prompt waits (kill -INT, kill -TERM) ends it as "no" and exits 128 + its number', async () => {
    await setup()
    expect((await targon([...UP, '--fleet', 'evt', '--json'])).code).toBe(0)
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      // The test's own time-out is the bound: before, the prompt waited for good.
      const killed = await onTerminal(['down', '--fleet', 'evt', '--json'], signal)
      expect(killed.code, killed.output).toBe(code)
      expect(killed.output).toContain('"code": "INTERRUPTED"')
      expect(killed.output).toContain(`interrupted by ${signal} at the prompt; nothing was deleted`)
    }
    expect(ctx.sim.requests('DELETE', '/workloads')).toHaveLength(0)
    expect(ctx.sim.billing()).toHaveLength(1)
    expect((await targon(['down', '--all', '--yes'])).code).toBe(0)
  })

  it('auto-detects a single org, and lists the slugs when the key has several', async () => {
    await setup()
    const multi = await targon(['status', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_multi_org_key'}})
    expect(multi.code).toBe(3)
    expect(parseJson(multi).error.message).toContain('acme, acme-research')
    const chosen = await targon(['status', '--org', 'acme-research', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_multi_org_key'}})
    expect(chosen.code).toBe(0)
    expect(parseJson(chosen).data.org).toBe('acme-research')
    expect(parseJson(await targon(['status', '--json'])).data.org).toBe('acme')
  })

  it('registers the project key once per org and reuses it', async () => {
    await setup()
    await targon([...UP, '--json'])
    await targon([...UP, '--json'])
    expect(ctx.sim.requests('POST', '/ssh-keys')).toHaveLength(1)
    expect(ctx.sim.sshKeys.size).toBe(1)
    // Deleted remotely: registered again on next use.
    ctx.sim.sshKeys.clear()
    expect((await targon([...UP, '--json'])).code).toBe(0)
    expect(ctx.sim.requests('POST', '/ssh-keys')).toHaveLength(2)
  })

  it('two processes racing on a fresh org end with one registered key and two VMs', async () => {
    await setup()
    const [a, b] = await Promise.all([targon([...UP, '--json'], {inProcess: false}), targon([...UP, '--json'], {inProcess: false})])
    expect([a.code, b.code]).toEqual([0, 0])
    expect(ctx.sim.sshKeys.size).toBe(1)
    expect(ctx.sim.live()).toHaveLength(2)
  })
})

describe('the event stream', () => {
  it('--events-file writes one run in order, 0600, replacing what was there; the terminal progress stays', async () => {
    await setup()
    const dir = tempDir('targon-events-')
    const file = join(dir, 'up.ndjson')
    // What was there is replaced, a symlink to another file included (that file is left alone).
    writeFileSync(join(dir, 'other'), 'keep me\n', {mode: 0o644})
    symlinkSync(join(dir, 'other'), file)
    const result = await targon([...UP, '--count', '2', '--events-file', file])
    expect(result.code, result.stderr).toBe(0)
    expect(readFileSync(join(dir, 'other'), 'utf8')).toBe('keep me\n')
    expect(lstatSync(file).isSymbolicLink()).toBe(false)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const events = parseEvents(readFileSync(file, 'utf8'))
    expectOneRunInOrder(events)
    // The progress on stderr is as without the flag.
    expect(result.stderr).toContain('wait-running')
    expect(result.stderr).not.toContain('"event_version"')
    const names = new Set(events.filter((event) => event.type === 'phase' && event.status === 'done').map((event) => event.vm?.name))
    expect(names).toEqual(new Set(liveNames()))
    expect((await targon(['down', '--all'])).code).toBe(0)
  })

  it('a failed up: the failing phase with its code and hint, each roll-back, and the run failed; stderr holds events only', async () => {
    await setup({provisioning: (workload) => (workload.deployIndex === 1 ? 'error' : 'normal')})
    const result = await targon([...UP, '--count', '2', '--events', 'ndjson'])
    expect(result.code).toBe(11)
    expect(result.stdout).toBe('')
    const events = parseEvents(result.stderr)
    expectOneRunInOrder(events)
    const failed = events.find((event) => event.type === 'phase' && event.status === 'failed')
    // The VM went to error: the code of the exit-code table, and the console's last line in the hint.
    expect(failed?.error?.code).toBe('API_ERROR')
    expect(failed?.error?.hint).toContain('targon logs')
    expect(failed?.phase).toBe('wait-running')
    const rolledBack = events.filter((event) => event.type === 'rollback' && event.status === 'done')
    expect(rolledBack.map((event) => event.vm?.uid).sort()).toEqual([...ctx.sim.workloads.keys()].sort())
    expect(events.at(-1)).toMatchObject({error: {code: 'PARTIAL_FAILURE'}, status: 'failed', type: 'run'})
    expect(events.at(-1)?.error?.hint).toContain('--min')
    expect(ctx.sim.billing()).toEqual([])
  })

  it('a second Ctrl-C exits at once, and the events file still ends with how the run ended', async () => {
    // Real time: the slow DELETE must still be slow when the last down, in process, waits for it.
    await setup({clock: REAL_CLOCK, deleteLatencyMs: 3000, provisioning: 'stuck'})
    const file = join(tempDir('targon-events-'), 'up.ndjson')
    const result = await targon([...UP, '--events-file', file], {
      inProcess: false,
      onSpawn(child) {
        const timer = setInterval(() => {
          if (!ctx.sim.live().some((workload) => workload.status === 'provisioning')) return
          clearInterval(timer)
          child.kill('SIGINT')
          // The clean-up's DELETE takes 3 s: the second Ctrl-C comes while it waits.
          setTimeout(() => child.kill('SIGINT'), 500)
        }, 50)
      },
    })
    expect(result.code).toBe(130)
    const events = parseEvents(readFileSync(file, 'utf8'))
    expect(events[0]).toMatchObject({status: 'started', type: 'run'})
    expect(events.at(-1)).toMatchObject({error: {code: 'INTERRUPTED'}, status: 'failed', type: 'run'})
    // On stderr, as without the file: what may still be there.
    expect(result.stderr).toContain('Exiting')
    expect((await targon(['down', '--all'])).code).toBe(0)
  })

  it('down --events ndjson: each deletion started and done; on a terminal a bulk delete needs --yes (exit 2)', async () => {
    await setup()
    expect((await targon([...UP, '--count', '2'])).code).toBe(0)
    const refused = await onTerminal(['down', '--all', '--events', 'ndjson'], '')
    expect(refused.code).toBe(2)
    expect(refused.output).not.toContain('[y/N]')
    expect(ctx.sim.billing()).toHaveLength(2)
    const result = await targon(['down', '--all', '--events', 'ndjson', '--json'])
    expect(result.code, result.stderr).toBe(0)
    expect(parseJson(result).data.results).toHaveLength(2)
    const events = parseEvents(result.stderr)
    expectOneRunInOrder(events)
    for (const uid of [...ctx.sim.workloads.keys()]) {
      const own = events.filter((event) => event.type === 'deletion' && event.vm?.uid === uid).map((event) => event.status)
      expect(own[0]).toBe('started')
      expect(own.at(-1)).toBe('done')
    }
    expect(ctx.sim.billing()).toEqual([])
  })
})

describe('plain progress of several VMs', () => {
  it('names its VM on every line, since the lines of VMs that work at once interleave', async () => {
    await setup()
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--count', '2', '--no-bootstrap'])
    expect(up.code, up.stderr).toBe(0)
    const names = parseJson(await targon(['status', '--json'])).data.vms.map((vm: {name: string}) => vm.name)
    expect(names).toHaveLength(2)
    const progress = up.stderr.split('\n').filter((line) => /register|deploy|wait-running/.test(line))
    expect(progress.length).toBeGreaterThanOrEqual(6)
    // By its name, or by its place in the run ("VM 2") before it has one.
    for (const line of progress) expect(names.some((name: string) => line.includes(`${name}: `)) || /VM [12]: /.test(line), line).toBe(true)
    expect(progress.filter((line) => names.some((name: string) => line.includes(name))).length).toBeGreaterThanOrEqual(4)
  })
})
