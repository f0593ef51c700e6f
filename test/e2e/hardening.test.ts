/**
 * Hardening against what a new user runs into: closed pipes and full disks, every interrupting signal, rate
 * limits on mutations, unanswered requests, stray arguments, short names and concurrent runs. Each test runs
 * the built CLI against the simulator and checks the exit code, the JSON envelope and the simulator's ledger.
 * Malformed settings and input are checked in process, in test/cmd/settings.test.ts.
 */
import {spawn} from 'node:child_process'
import {readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {writePin} from '../../src/lib/adapters/ssh/pins.js'
import {BIN, CONFIG_FILE_VARIANTS, type CliResult, ROOT, baseEnv, parseJson, signalWhen, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {simulatorEnv} from '../helpers/simulator.js'

const ctx = useFreshFixture()
const {targon} = ctx
const setup = ctx.setup

function env(extra: Record<string, string | undefined> = {}) {
  return simulatorEnv(ctx.sim, {TARGON_CONFIG_DIR: ctx.configDir, ...extra})
}

/** Runs targon inside bash, e.g. with its output redirected: `targon up ... 2>&1 | head -1`. */
function targonShell(line: string, extraEnv: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const script = `targon() { node ${BIN} "$@"; }\n${line}\nexit \${PIPESTATUS[0]}`
    const child = spawn('bash', ['-c', script], {env: baseEnv(env(extraEnv)), stdio: ['ignore', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({code, signal, stderr, stdout}))
  })
}

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

describe('output that cannot be written', () => {
  it('a closed stderr pipe does not stop up from cleaning up, nor down from deleting everything', async () => {
    await setup({provisioning: 'error'})
    const failed = await targonShell(`targon ${UP.join(' ')} 2>&1 | head -1`)
    expect(failed.code, failed.stdout).toBe(5)
    expect(ctx.sim.live()).toEqual([])

    await ctx.sim.stop()
    await setup()
    for (let index = 0; index < 3; index++) expect((await targon([...UP, '--json'])).code).toBe(0)
    expect(ctx.sim.live()).toHaveLength(3)
    const down = await targonShell('targon down --all --parallel 1 2>&1 | head -1')
    expect(down.code, down.stdout).toBe(0)
    expect(ctx.sim.live()).toEqual([])
  })

  it('a full disk behind stdout or stderr is not fatal, and --version into a closed pipe prints no stack trace', async () => {
    await setup()
    const up = await targonShell(`targon ${UP.join(' ')} 2>/dev/full >/dev/full`)
    expect(up.code).toBe(0)
    expect(ctx.sim.live()).toHaveLength(1)
    const down = await targonShell('targon down --all --json >/dev/full')
    expect(down.code).toBe(0)
    expect(ctx.sim.live()).toEqual([])

    const version = await targonShell('targon --version | true')
    expect(version.code).toBe(0)
    expect(version.stderr).toBe('')
  })
})

describe('signals', () => {
  const cases: [NodeJS.Signals, number][] = [
    ['SIGHUP', 129],
    ['SIGINT', 130],
    ['SIGQUIT', 131],
    ['SIGTERM', 143],
  ]
  for (const [signal, exit] of cases) {
    for (const variant of CONFIG_FILE_VARIANTS)
      it(`${signal} during up cleans up and exits ${exit} (INTERRUPTED), in JSON and human mode (${variant.label})`, async () => {
        await setup({provisioning: 'stuck'})
        variant.prepare(ctx.configDir)
        const provisioning = () => ctx.sim.live().some((workload) => workload.status === 'provisioning')
        const json = await targon([...UP, '--json'], {onSpawn: signalWhen(provisioning, signal)})
        expect(json.code, json.stderr).toBe(exit)
        expect(parseJson(json).error).toMatchObject({code: 'INTERRUPTED', exit_code: exit})
        expect(ctx.sim.live()).toEqual([])

        const human = await targon(UP, {onSpawn: signalWhen(provisioning, signal)})
        expect(human.code, human.stderr).toBe(exit)
        expect(human.stderr).toContain(`interrupted by ${signal}`)
        // Text mode names what the clean-up deleted, as --json does in data.cleanup.
        expect(human.stderr).toMatch(/Clean-up:\n {2}deleted: tcli-default-\S+ \(wrk-\S+\), no longer bills\n/)
        expect(ctx.sim.live()).toEqual([])
      })
  }
})

describe('rate limits and deadlines', () => {
  it('retries a 429 on key registration, create and deploy after Retry-After, without taking it for a refusal', async () => {
    await setup()
    const tooMany = {
      body: JSON.stringify({error: 'too many requests: capacity of the rate limiter exceeded', reason: 'RATE_LIMITED'}),
      retryAfter: '0.2',
      status: 429,
      times: 2,
    }
    ctx.sim.inject({...tooMany, method: 'POST', path: /\/ssh-keys$/})
    ctx.sim.inject({...tooMany, method: 'POST', path: /\/workloads$/})
    ctx.sim.inject({...tooMany, method: 'POST', path: '/deploy'})
    const up = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(up.code, up.stdout).toBe(0)
    const doc = parseJson(up)
    expect(doc.data.vms[0].resource).toBe('rtx6000b-small')
    expect(doc.warnings).toEqual([])
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.requests('POST', '/deploy').map((request) => request.status)).toEqual([429, 429, 200])
    expect(ctx.sim.live().map((workload) => workload.status)).toEqual(['running'])
  })

  it('a 429 that outlasts its retries is an API error, never a capacity refusal: no other offer is rented', async () => {
    await setup()
    ctx.sim.inject({
      body: JSON.stringify({error: 'no capacity left in the rate limiter', reason: 'RATE_LIMITED'}),
      method: 'POST',
      path: '/deploy',
      retryAfter: '0',
      status: 429,
    })
    const up = await targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(up.code).toBe(5)
    expect(parseJson(up).error).toMatchObject({code: 'API_ERROR', http_status: 429})
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.billing()).toEqual([])
    // Never deployed, so Targon refuses to delete it (500): named as a leftover, and it does not run.
    expect(parseJson(up).data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual(
      ctx.sim.live().map((workload) => workload.uid),
    )
  })

  it('--timeout bounds requests that are never answered, and what was created is deleted (exit 6)', async () => {
    await setup()
    ctx.sim.inject({delayMs: 60_000, path: '/tha/v3/inventory'})
    let started = Date.now()
    const silent = await targon([...UP, '--timeout', '2s', '--json'])
    expect(silent.code).toBe(6)
    expect(parseJson(silent).error.code).toBe('TIMEOUT')
    expect(Date.now() - started).toBeLessThan(8000)

    ctx.sim.clearFaults()
    ctx.sim.inject({delayMs: 60_000, method: 'POST', path: '/deploy'})
    started = Date.now()
    const deploy = await targon([...UP, '--timeout', '3s', '--json'])
    expect(deploy.code).toBe(6)
    expect(parseJson(deploy).error.code).toBe('TIMEOUT')
    expect(parseJson(deploy).data.cleanup).toMatchObject({attempted: true, survivors: []})
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.billing()).toEqual([])
    expect(parseJson(deploy).data.leftovers.map((leftover: {uid: string}) => leftover.uid)).toEqual(
      ctx.sim.live().map((workload) => workload.uid),
    )
  })
})

describe('messages', () => {
  it('--on-failure keep says the VM was kept, that it is still billing, and how to delete it', async () => {
    await setup({provisioning: 'error'})
    const result = await targon([...UP, '--on-failure', 'keep', '--json'])
    expect(result.code).toBe(5)
    const [vm] = ctx.sim.live()
    expect(vm).toBeDefined()
    const {message} = parseJson(result).error
    expect(message).toContain(`kept ${vm?.name} (${vm?.uid}) (--on-failure keep), still billing: delete with targon down ${vm?.uid}`)
    expect((await targon(['down', vm?.uid as string])).code).toBe(0)
    expect(ctx.sim.live()).toEqual([])
  })

  it('speaks of one VM in the singular', async () => {
    await setup({provisioning: (workload) => (workload.deployIndex === 0 ? 'error' : 'normal')})
    const fleet = await targon([...UP, '--count', '2', '--json'])
    expect(fleet.code).toBe(11)
    expect(parseJson(fleet).error.message).toBe('1 of 2 VMs failed; the one that succeeded was rolled back')
    expect(ctx.sim.live()).toEqual([])

    expect((await targon(UP)).code).toBe(0)
    const status = await targon(['status'])
    expect(status.stderr).toMatch(/^1 VM, /m)
    expect((await targon(['down', '--all'])).code).toBe(0)
  })
})

describe('short names', () => {
  it('after up --name worker1, status, ssh and down find worker1 within the fleet', async () => {
    await setup()
    const up = await targon([...UP, '--name', 'worker1', '--json'])
    expect(up.code, up.stdout).toBe(0)
    const {uid} = parseJson(up).data.vms[0]
    const trained = await targon([...UP, '--name', 'worker1', '--fleet', 'train', '--json'])
    const trainUid = parseJson(trained).data.vms[0].uid

    const status = await targon(['status', 'worker1', '--json'])
    expect(status.code, status.stdout).toBe(0)
    expect(parseJson(status).data.vms.map((vm: {uid: string}) => vm.uid)).toEqual([uid])
    expect(
      parseJson(await targon(['status', 'worker1', '--fleet', 'train', '--json'])).data.vms.map((vm: {uid: string}) => vm.uid),
    ).toEqual([trainUid])
    // A pinned host key, so that ssh --json does not need a live sshd to print the connection.
    writePin(ctx.configDir, trainUid, '127.0.0.1', 22, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk8hW1WvWq0cJ8q6yG7Yb8kQ2m4Zx3n5p7r9t1v3x5z')
    const ssh = await targon(['ssh', 'worker1', '--fleet', 'train', '--json'])
    expect(ssh.code, ssh.stdout).toBe(0)
    expect(parseJson(ssh).data.uid).toBe(trainUid)
    expect((await targon(['status', 'worker2', '--json'])).code).toBe(4)

    const down = await targon(['down', 'worker1', '--json'])
    expect(down.code, down.stdout).toBe(0)
    expect(parseJson(down).data.results).toMatchObject([{action: 'deleted', uid}])
    expect(ctx.sim.live().map((workload) => workload.uid)).toEqual([trainUid])

    // down reads a label in the configured fleet, as status and ssh do.
    expect((await targon(['config', 'set', 'fleet', 'train'])).code).toBe(0)
    const trainDown = await targon(['down', 'worker1', '--json'])
    expect(parseJson(trainDown).data.results).toMatchObject([{action: 'deleted', uid: trainUid}])
    expect(ctx.sim.billing()).toEqual([])
  })

  it('up --name alone only takes over: a name that matches nothing exits 4 and rents nothing', async () => {
    await setup()
    const typo = await targon(['up', '--name', 'wroker1', '--max-price', '1.8', '--no-bootstrap', '--json'])
    expect(typo.code).toBe(4)
    expect(parseJson(typo).error.message).toContain('no VM named tcli-default-wroker1 to take over')
    expect(ctx.sim.workloads.size).toBe(0)
  })
})

describe('adopting with a new TTL', () => {
  it('up --name tt --ttl 5m on an existing tt applies the new TTL and says so', async () => {
    await setup()
    const first = parseJson(await targon([...UP, '--name', 'tt', '--ttl', '6h', '--json']))
    const firstExpiry = Date.parse(first.data.vms[0].ttl_expires_at)
    expect(firstExpiry).toBeGreaterThan(Date.now() + 5 * 3_600_000)

    const again = await targon([...UP, '--name', 'tt', '--ttl', '5m', '--json'])
    expect(again.code, again.stdout).toBe(0)
    const doc = parseJson(again)
    expect(doc.data.vms[0].adopted).toBe(true)
    const expiry = Date.parse(doc.data.vms[0].ttl_expires_at)
    expect(expiry).toBeLessThan(Date.now() + 5 * 60_000 + 1000)
    expect(doc.warnings.join(' ')).toContain(
      `its TTL now ends at ${doc.data.vms[0].ttl_expires_at} (was ${first.data.vms[0].ttl_expires_at})`,
    )
    const status = parseJson(await targon(['status', 'tt', '--json']))
    expect(status.data.vms[0].ttl_expires_at).toBe(doc.data.vms[0].ttl_expires_at)

    // From a fresh config directory (another machine), the TTL is kept in a new local record.
    const elsewhere = tempDir('targon-config-')
    const adopted = await targon([...UP, '--name', 'tt', '--ttl', '1h', '--json'], {env: {TARGON_CONFIG_DIR: elsewhere}})
    expect(adopted.code, adopted.stdout).toBe(0)
    expect(parseJson(adopted).data.vms[0].ttl_expires_at).not.toBeNull()
    expect(ctx.sim.live()).toHaveLength(1)
  })
})

describe('concurrent runs with one name', () => {
  it('two up --name same from two config directories end with one VM, reported by both', async () => {
    await setup()
    // Both runs look the name up before either create is committed.
    ctx.sim.inject({delayMs: 500, method: 'POST', path: /\/workloads$/, times: 2})
    const [a, b] = await Promise.all(
      [tempDir('targon-config-'), tempDir('targon-config-')].map((dir) =>
        targon([...UP, '--name', 'same', '--json'], {env: {TARGON_CONFIG_DIR: dir}}),
      ),
    )
    expect(a?.code, a?.stdout).toBe(0)
    expect(b?.code, b?.stdout).toBe(0)
    expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(2)
    const [vmA, vmB] = [parseJson(a as CliResult).data.vms[0], parseJson(b as CliResult).data.vms[0]]
    expect(vmA.uid).toBe(vmB.uid)
    expect([vmA.adopted, vmB.adopted].sort()).toEqual([false, true])
    expect(ctx.sim.billing().map((workload) => [workload.uid, workload.status])).toEqual([[vmA.uid, 'running']])
    expect(ctx.sim.requests('POST', '/deploy')).toHaveLength(1)
    // The newer run's duplicate was never deployed; Targon refuses to delete it (500), so that run names it.
    const leftovers = [a, b].flatMap((result) =>
      parseJson(result as CliResult).data.leftovers.map((leftover: {uid: string}) => leftover.uid),
    )
    expect(
      ctx.sim
        .live()
        .filter((workload) => workload.status === 'registered')
        .map((workload) => workload.uid),
    ).toEqual(leftovers)

    const down = await targon(['down', '--all', '--json'])
    expect(down.code).toBe(0)
    expect(ctx.sim.billing()).toEqual([])
  })
})

describe('stray arguments', () => {
  it('are a usage error with the JSON envelope, while a mistyped command still gets a suggestion (exit 127)', async () => {
    await setup()
    for (const args of [
      ['offers', 'h200'],
      ['config', 'list', 'extra'],
      ['config', 'get', 'org', 'extra'],
    ]) {
      const result = await targon([...args, '--json'])
      expect(result.code, args.join(' ')).toBe(2)
      expect(parseJson(result).error).toMatchObject({code: 'USAGE', message: `Unexpected argument: ${args.at(-1)}`})
      expect((await targon(args)).code).toBe(2)
    }

    for (const [typo, suggestion] of [
      ['offerz', 'offers'],
      ['confg lst', 'config list'],
    ] as const) {
      const result = await targon(typo.split(' '))
      expect(result.code).toBe(127)
      expect(result.stderr).toContain(`Did you mean ${suggestion}?`)
    }
  })
})

describe('small truths', () => {
  it('status shows the GPUs like up does, from the inventory when the listing names only the resource', async () => {
    await setup({resourceDetail: false})
    expect((await targon(UP)).code).toBe(0)
    const status = parseJson(await targon(['status', '--json']))
    expect(status.data.vms[0]).toMatchObject({gpu_count: 1, gpu_model: 'RTX-PRO-6000B', resource: 'rtx6000b-small'})
    expect((await targon(['status'])).stdout).toContain('1x RTX-PRO-6000B')
  })

  it('a terminal without cursor control or width gets plain progress lines', async () => {
    await setup()
    for (const [term, setup] of [
      ['dumb', 'stty cols 120'],
      ['xterm', 'stty cols 0'],
    ]) {
      // script(1) runs targon on a pseudo-terminal, as a user's shell would.
      const result = await targonShell(`script -qec "${setup}; node ${BIN} ${UP.join(' ')}" /dev/null`, {TERM: term})
      expect(result.code, result.stdout).toBe(0)
      expect(result.stdout).not.toContain('\u001B[')
      expect(result.stdout).toMatch(/^\S+ register\r?$/m)
    }
  })

  it('status --dstack-fleet without an eligible VM warns and exits 4', async () => {
    await setup()
    expect((await targon(UP)).code).toBe(0)
    const result = await targon(['status', '--dstack-fleet', '--json'])
    expect(result.code).toBe(4)
    expect(parseJson(result).error.code).toBe('NOT_FOUND')
    const human = await targon(['status', '--dstack-fleet'])
    expect(human.code).toBe(4)
    expect(human.stdout).toBe('')
    expect(human.stderr).toContain('Warning: 1 VM of fleet default is not bootstrapped and running')
  })

  it('down names an unnamed uid once', async () => {
    // The tombstone leaves the listing at once, so the second run knows the uid only from its delete note.
    await setup({tombstoneLifetimeMs: 0})
    const {uid} = parseJson(await targon([...UP, '--json'])).data.vms[0]
    expect((await targon(['down', uid])).code).toBe(0)
    const again = await targon(['down', uid])
    expect(again.stderr).toContain(`already-gone: ${uid}\n`)
  })

  it('the key files have the modes the files table states', async () => {
    await setup()
    expect((await targon(UP)).code).toBe(0)
    const table = readFileSync(join(ROOT, 'docs/concepts/files-and-security.md'), 'utf8')
    for (const file of ['keys/id_ed25519', 'keys/id_ed25519.pub']) {
      const row = new RegExp(`^\\| \`${file.replaceAll('.', '\\.')}\` \\|.*\\| (0[0-7]{3}) \\|$`, 'm').exec(table)
      expect(row, file).not.toBeNull()
      expect((statSync(join(ctx.configDir, file)).mode & 0o777).toString(8).padStart(4, '0'), file).toBe(row?.[1])
    }
  })
})
