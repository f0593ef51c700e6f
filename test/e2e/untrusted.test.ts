/**
 * What a hostile or buggy API, a misbehaving VM and a webhook that never stops answering can do, on simulated VMs
 * (real sshd, needs root): a VM renamed after create to an SSH config injection, to `.ssh` or to Slack markup is known
 * by its uid only, writes nothing outside its place, and is still deleted; OpenSSH itself (ssh -G) proves that no
 * directive of the generated config came from the API.
 */
import {execFileSync, spawn} from 'node:child_process'
import {existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, type CliResult, baseEnv, parseJson, tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {simulatorEnv} from '../helpers/simulator.js'
import {useWebhook} from '../helpers/webhook.js'

const simulated = useVmFixture({inProcess: true})
const hook = useWebhook()
const {configDir, targon} = simulated
const PWNED = join(tempDir('targon-pwned-'), 'pwned')
const INJECTION = `evil *\n  ProxyCommand touch ${PWNED}`
const MARKUP = '<!channel> <https://evil.example/login|Re-authenticate targon>'

/** `ssh -G`: the options OpenSSH would use for `host` under the config `file`, as "key value" lines. */
function effective(file: string, host: string): Set<string> {
  return new Set(execFileSync('ssh', ['-G', '-F', file, host], {encoding: 'utf8'}).trim().split('\n'))
}

/** The options targon's Host entries set, as ssh -G names them (updatehostkeys follows from UserKnownHostsFile). */
const OURS = new Set([
  'controlmaster',
  'controlpath',
  'forwardagent',
  'globalknownhostsfile',
  'hostkeyalias',
  'hostname',
  'identitiesonly',
  'identityfile',
  'port',
  'stricthostkeychecking',
  'updatehostkeys',
  'user',
  'userknownhostsfile',
])

let vms: {name: string; uid: string}[] = []

/** Three VMs of the fleet `hx`, made by this directory (so known to be ours by their local records). */
beforeAll(async () => {
  const args = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--count', '3', '--fleet', 'hx', '--json']
  vms = parseJson(await targon(args, {timeoutMs: 120_000})).data.vms
  expect(vms).toHaveLength(3)
}, 150_000)

afterAll(async () => {
  await targon(['down', '--all', '--yes'])
})

/** The most any run may hold: a flood of bytes must be cut off, not buffered (measured figures are printed). */
const MAX_RSS_MB = 300

/**
 * The kernel's peak resident memory of a child (getrusage's maxrss, in KiB), written to a file: python3 is there
 * wherever the simulated VMs are (scripts/prerequisites.sh).
 */
const MAXRSS = [
  'import resource, subprocess, sys',
  'code = subprocess.call(sys.argv[2:])',
  "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))",
  'sys.exit(code)',
].join('\n')

/** Runs targon measured: its result and its peak resident memory in MB. */
function measured(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult & {peakMb: number}> {
  const report = join(tempDir('targon-rss-'), 'maxrss')
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', MAXRSS, report, process.execPath, BIN, ...args], {
      env: baseEnv(simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir, ...env})),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const peakMb = Number(readFileSync(report, 'utf8')) / 1024
      console.log(`peak RSS of targon ${args.join(' ')}: ${peakMb.toFixed(1)} MB`)
      resolve({code, peakMb, signal, stderr, stdout})
    })
  })
}

describe('a VM whose idle probe prints without end', () => {
  it('is cut off at 64 KiB and reported unreadable: status --usage stays far under 300 MB and finishes', async () => {
    // What runs as the probe prints 64 KiB chunks for as long as anyone reads.
    const flood = "import sys\nchunk = 'x' * 65536\nwhile True:\n    sys.stdout.write(chunk)\n"
    const install = `sudo mkdir -p /usr/local/lib/targon-fleet && echo ${Buffer.from(flood).toString('base64')} | base64 -d | sudo tee /usr/local/lib/targon-fleet/idle-sampler.py >/dev/null`
    const placed = await targon(['exec', '--fleet', 'hx', '--', install])
    expect(placed.code, placed.stdout + placed.stderr).toBe(0)
    const status = await measured(['status', '--fleet', 'hx', '--usage', '--json'])
    expect(status.code, status.stderr).toBe(0)
    const usages = parseJson(status).data.vms.map((vm: {usage: {state: string; idle_reason: string}}) => vm.usage)
    expect(usages).toHaveLength(3)
    for (const usage of usages) expect(usage).toMatchObject({idle_reason: expect.stringContaining('more than 64 KiB'), state: 'unreadable'})
    expect(status.peakMb).toBeLessThan(MAX_RSS_MB)
  })
})

describe('a command that prints without end through exec', () => {
  it('is streamed, not held: 100 MB without a newline on each VM, and exec stays under 300 MB', async () => {
    const exec = await measured(['exec', '--fleet', 'hx', '--json', '--', "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo done"])
    expect(exec.code, exec.stderr).toBe(0)
    const results = parseJson(exec).data.results as {exit_code: number; tail: string[]}[]
    expect(results).toHaveLength(3)
    for (const result of results) {
      expect(result.exit_code).toBe(0)
      expect(result.tail.at(-1)).toBe('done')
      expect(result.tail.every((line) => line.length <= 4097)).toBe(true)
    }
    expect(exec.peakMb).toBeLessThan(MAX_RSS_MB)
  })
})

describe('a VM renamed after create', () => {
  it('is known by its uid: ssh --config writes no directive from its name (ssh -G), and cp --fleet stays in DEST/<uid>/', async () => {
    const [injected, dotSsh, marked] = vms as unknown as [{uid: string}, {uid: string}, {uid: string}]
    simulated.sim.renameHostile(injected.uid, INJECTION)
    simulated.sim.renameHostile(dotSsh.uid, '.ssh')
    simulated.sim.renameHostile(marked.uid, MARKUP)

    const status = parseJson(await targon(['status', '--fleet', 'hx', '--json']))
    for (const vm of vms) expect(status.data.vms.find((each: {uid: string}) => each.uid === vm.uid)).toMatchObject({name: null})
    // One line for them all, by uid.
    const refused = status.warnings.filter((warning: string) => warning.includes("break Targon's naming rule"))
    expect(refused).toHaveLength(1)
    expect(refused[0]).toMatch(/^3 VMs have names that break Targon's naming rule, shown by uid: /)
    for (const vm of vms) expect(refused[0]).toContain(vm.uid)
    expect(JSON.stringify(status)).not.toContain('ProxyCommand')

    // Every form: the fleet's entries, and one VM's by uid.
    const dir = tempDir('targon-ssh-config-')
    for (const [label, args] of [
      ['fleet', ['ssh', '--config', '--fleet', 'hx']],
      ['one', ['ssh', '--config', injected.uid, '--fleet', 'hx']],
    ] as const) {
      const config = await targon([...args])
      expect(config.code, config.stderr).toBe(0)
      const file = join(dir, `${label}.conf`)
      writeFileSync(file, config.stdout)
      expect(config.stdout).not.toContain('ProxyCommand')
      expect(config.stdout).toContain(`Host ${injected.uid}\n`)
      expect(config.stderr.match(/naming rule/g), config.stderr).toHaveLength(1)
      expect(config.stderr).toMatch(new RegExp(`(${injected.uid} has a name that breaks|VMs have names that break) Targon's naming rule`))
      expect(config.stderr).toContain(injected.uid)
      // A host the config is not about gets exactly what an empty config gives it.
      expect(effective(file, 'github.com')).toEqual(effective('/dev/null', 'github.com'))
      // The VM's own entry sets only targon's options.
      const baseline = effective('/dev/null', injected.uid)
      const changed = [...effective(file, injected.uid)].filter((line) => !baseline.has(line)).map((line) => line.split(' ')[0] as string)
      expect(changed.filter((key) => !OURS.has(key))).toEqual([])
      expect(changed).toEqual(expect.arrayContaining(['hostname', 'port', 'hostkeyalias']))
    }

    expect(existsSync(PWNED)).toBe(false)

    // cp --fleet: one folder per VM, from a checked name or the uid; DEST/.ssh/authorized_keys stays as it was.
    const exec = await targon(['exec', '--fleet', 'hx', '--', 'echo from-the-vm > /tmp/authorized_keys'])
    expect(exec.code, exec.stdout + exec.stderr).toBe(0)
    const dest = tempDir('targon-cp-dest-')
    mkdirSync(join(dest, '.ssh'))
    writeFileSync(join(dest, '.ssh', 'authorized_keys'), 'keep me\n')
    const cp = await targon(['cp', ':/tmp/authorized_keys', `${dest}/`, '--fleet', 'hx', '--json'])
    expect(cp.code, cp.stdout + cp.stderr).toBe(0)
    // cp and exec say so too, in one line each.
    expect(parseJson(cp).warnings.filter((warning: string) => /3 VMs have names that break/.test(warning))).toHaveLength(1)
    expect(exec.stderr.match(/3 VMs have names that break Targon's naming rule/g), exec.stderr).toHaveLength(1)
    expect(readFileSync(join(dest, '.ssh', 'authorized_keys'), 'utf8')).toBe('keep me\n')
    expect(readdirSync(dest).sort()).toEqual(['.ssh', ...vms.map((vm) => vm.uid)].sort())
    for (const vm of vms) expect(readFileSync(join(dest, vm.uid, 'authorized_keys'), 'utf8')).toBe('from-the-vm\n')
  })

  it('is never replaced: up --name of its recorded name refuses, so the record that keeps it ours stays', async () => {
    const renamed = vms[0] as {name: string; uid: string}
    const count = simulated.sim.workloads.size
    const again = await targon([
      'up',
      'rtx6000b-small',
      '--max-price',
      '1.8',
      '--no-bootstrap',
      '--name',
      renamed.name,
      '--fleet',
      'hx',
      '--json',
    ])
    expect(again.code, again.stdout).toBe(2)
    expect(parseJson(again).error).toMatchObject({code: 'NAME_CONFLICT', hint: expect.stringContaining(`targon down ${renamed.uid}`)})
    expect(simulated.sim.workloads.size).toBe(count)
  })

  it('is still ours by its local record: a bulk down deletes it by uid, and its notification carries no name of it', async () => {
    hook.received.length = 0
    // --over-cost is a scheduled selector: it posts down-deleted (--all alone posts nothing).
    const down = await targon(['down', '--over-cost', '0.0001', '--fleet', 'hx', '--json'], {env: {TARGON_NOTIFY_URL: hook.url}})
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(
      parseJson(down)
        .data.results.map((each: {uid: string}) => each.uid)
        .sort(),
    ).toEqual(vms.map((vm) => vm.uid).sort())
    expect(simulated.sim.billing()).toEqual([])
    expect(hook.received).toHaveLength(1)
    const posted = JSON.stringify(hook.received[0]?.body)
    expect(posted).toMatch(/down-deleted|deleted 3 VMs/)
    for (const vm of vms) expect(posted).toContain(vm.uid)
    // No markup Slack would act on, and none of the refused names (markup, config injection, .ssh).
    expect(posted).not.toMatch(/<[!@#]|<https?:/)
    for (const refused of ['<!channel>', 'evil.example', 'ProxyCommand', 'evil *', '.ssh']) expect(posted).not.toContain(refused)
  })

  it("of another origin, it stays another origin's: no bulk down takes it", async () => {
    const foreign = simulated.sim.addWorkload({name: 'theirs', status: 'running'})
    simulated.sim.renameHostile(foreign.uid, INJECTION)
    const down = await targon(['down', '--all', '--json'])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    expect(simulated.sim.billing().map((workload) => workload.uid)).toEqual([foreign.uid])
    expect((await targon(['down', foreign.uid, '--json'])).code).toBe(0)
  })
})
describe('Slack markup from the API', () => {
  it('arrives escaped: <!channel> and a link in an error message are plain text', async () => {
    hook.received.length = 0
    simulated.sim.inject({
      body: JSON.stringify({error: `refused: ${MARKUP} & more`, reason: 'INVALID_JSON_BODY'}),
      method: 'POST',
      path: /\/workloads$/,
      status: 400,
      times: 1,
    })
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {
      env: {TARGON_NOTIFY_URL: hook.url},
    })
    expect(up.code).not.toBe(0)
    expect(hook.received).toHaveLength(1)
    const text = hook.received[0]!.body.text as string
    expect(text).toContain('&lt;!channel&gt; &lt;https://evil.example/login|Re-authenticate targon&gt; &amp; more')
    expect(text).not.toMatch(/[<>]/)
    expect(simulated.sim.billing()).toEqual([])
  })
})

describe('a webhook that answers without end', () => {
  it('is read to a few KiB: down deletes, notifies and finishes, far under 300 MB', async () => {
    const flooding = createServer((request, response) => {
      request.resume()
      response.writeHead(200, {'content-type': 'text/plain'})
      const chunk = Buffer.alloc(64 * 1024, 'x')
      const more = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', more)
      }
      more()
    })
    await new Promise<void>((resolve) => flooding.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(flooding.address() as {port: number}).port}/services/flood`
      // Running for an hour: over any cost, so down --over-cost deletes it and sends its notification.
      simulated.sim.addWorkload({
        created_at: new Date(Date.now() - 3_600_000).toISOString(),
        deployedAt: Date.now() - 3_600_000,
        name: 'tcli-hx-flood',
        status: 'running',
      })
      const down = await measured(['down', '--over-cost', '0.01', '--fleet', 'hx', '--json'], {TARGON_NOTIFY_URL: url})
      expect(down.code, down.stderr).toBe(0)
      expect(parseJson(down).data.results).toMatchObject([{action: 'deleted'}])
      expect(simulated.sim.billing()).toEqual([])
      expect(parseJson(down).warnings.join('\n')).not.toContain('not delivered')
      expect(down.peakMb).toBeLessThan(MAX_RSS_MB)
    } finally {
      flooding.closeAllConnections()
      flooding.close()
    }
  })
})
