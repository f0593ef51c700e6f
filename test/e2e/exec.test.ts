/**
 * `targon exec` on simulated VMs that are real SSH hosts (needs root, like bootstrap.test.ts).
 */
import {readFileSync, rmSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {errorLines, parseJson} from '../helpers/cli.js'
import {expectOneRunInOrder, parseEvents} from '../helpers/events.js'
import {useVmFixture} from '../helpers/fixture.js'
import {unusedPort} from '../helpers/ports.js'

const simulated = useVmFixture({inProcess: true})
const {configDir, targon} = simulated

describe('targon exec', () => {
  it('runs a command on every VM of a fleet; one failing host makes exit 12 with per-VM results', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--count', '3', '--fleet', 'ex', '--json'], {
      timeoutMs: 120_000,
    })
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vms: {name: string; uid: string}[] = parseJson(up).data.vms
    const [bad, ...good] = vms

    // One host gets a marker file, through exec on that VM alone.
    const mark = await targon(['exec', '--vms', bad!.name, '--json', '--', 'touch', '/home/ubuntu/fail', '&&', 'echo', 'marked'])
    expect(mark.code, mark.stdout + mark.stderr).toBe(0)
    expect(parseJson(mark).data.results).toMatchObject([{exit_code: 0, name: bad!.name, tail: ['marked']}])
    // Its first contact: the key is pinned now, and --json says so.
    expect(parseJson(mark).data.results[0].host_key).toMatchObject({fingerprint: expect.stringMatching(/^SHA256:/), new: true})
    expect(simulated.farm.vm(bad!.uid).hasFile('/home/ubuntu/fail')).toBe(true)
    expect(good.every((vm) => !simulated.farm.vm(vm.uid).hasFile('/home/ubuntu/fail'))).toBe(true)

    const script =
      "for i in 1 2 3; do echo line$i; done; echo warn >&2; test ! -e /home/ubuntu/fail || { echo 'found the marker'; exit 3; }"
    const all = await targon(['exec', '--fleet', 'ex', '--', script])
    expect(all.code, all.stderr).toBe(12)
    const out = all.stdout.trimEnd().split('\n')
    for (const vm of vms) {
      expect(out.filter((line) => line.startsWith(`${vm.name} | `)).map((line) => line.slice(vm.name.length + 3))).toEqual(
        vm === bad ? ['line1', 'line2', 'line3', 'found the marker'] : ['line1', 'line2', 'line3'],
      )
    }

    expect(out.every((line) => vms.some((vm) => line.startsWith(`${vm.name} | line`) || line === `${vm.name} | found the marker`))).toBe(
      true,
    )
    expect(all.stderr).toContain(`${bad!.name} | warn`)
    expect(all.stderr).toContain(`the command failed on 1 of 3 VMs: ${bad!.name}`)

    const json = await targon(['exec', '--fleet', 'ex', '--parallel', '2', '--json', '--', script])
    expect(json.code).toBe(12)
    const doc = parseJson(json)
    expect(doc.error).toMatchObject({code: 'REMOTE_COMMAND_FAILED', exit_code: 12})
    const results = new Map(doc.data.results.map((result: {name: string}) => [result.name, result]))
    const failedHost = results.get(bad!.name) as {error: string | null; exit_code: number; tail: string[]}
    expect(failedHost).toMatchObject({error: null, exit_code: 3})
    // stdout and stderr each keep their order; how they mix depends on the network.
    expect(failedHost.tail.filter((line) => line !== 'warn')).toEqual(['line1', 'line2', 'line3', 'found the marker'])
    expect(failedHost.tail).toContain('warn')
    for (const vm of good) expect(results.get(vm.name)).toMatchObject({exit_code: 0, error: null, uid: vm.uid})
    expect(failedHost).toMatchObject({host_key: {new: false}})
    expect(doc.data.results.every((result: {duration_ms: number}) => result.duration_ms >= 0)).toBe(true)

    // --events ndjson: stdout keeps the VMs' output, stderr holds events only (the VMs' stderr among them).
    const followed = await targon(['exec', '--fleet', 'ex', '--events', 'ndjson', '--', script])
    expect(followed.code).toBe(12)
    expect(followed.stdout.trimEnd().split('\n')).toHaveLength(10)
    const events = parseEvents(followed.stderr)
    expectOneRunInOrder(events)
    for (const vm of vms) {
      const own = events.filter((event) => event.type === 'exec' && event.vm?.uid === vm.uid)
      expect(own[0]?.status).toBe('started')
      expect(own.at(-1)).toMatchObject(vm === bad ? {detail: 'exit code 3', status: 'failed'} : {detail: 'exit code 0', status: 'done'})
    }
    expect(events.filter((event) => event.status === 'progress').map((event) => event.detail)).toContain(`${bad!.name} | warn`)
    expect(events.at(-1)).toMatchObject({error: {code: 'REMOTE_COMMAND_FAILED'}, status: 'failed', type: 'run'})

    const ok = await targon(['exec', '--vms', good.map((vm) => vm.name).join(','), '--json', '--', 'true'])
    expect(ok.code).toBe(0)
    expect(parseJson(ok).data.results.map((result: {exit_code: number}) => result.exit_code)).toEqual([0, 0])
  })

  it('passes non-ASCII output through whole, though SSH hands it over in chunks that split characters', async () => {
    // 3000 lines of 41 bytes: the channel's chunks end inside a two-byte character again and again.
    const line = 'é'.repeat(20)
    const text = await targon(['exec', '--fleet', 'ex', '--', `for i in $(seq 3000); do echo ${line}; done`])
    expect(text.code, text.stderr).toBe(0)
    expect(text.stdout).not.toContain('\uFFFD')
    const lines = text.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(3 * 3000)
    expect(lines.every((each) => each.endsWith(` | ${line}`))).toBe(true)
  })

  it('refuses bad input with one line: no command (2), an unknown VM (4), an empty fleet (4)', async () => {
    const none = await targon(['exec', '--fleet', 'ex'])
    expect(none.code).toBe(2)
    const unknown = await targon(['exec', '--vms', 'nosuchvm', '--', 'true'])
    expect(unknown.code).toBe(4)
    expect(errorLines(unknown.stderr)).toHaveLength(1)
    const empty = await targon(['exec', '--fleet', 'nobody', '--json', '--', 'true'])
    expect(empty.code).toBe(4)
    expect(parseJson(empty).error.code).toBe('NOT_FOUND')
  })
})

describe('targon ssh with port forwarding', () => {
  it('passes -L, -R, -D and -N to OpenSSH, and refuses a spec that could pass for another option', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'fw', '--json'], {
      timeoutMs: 120_000,
    })
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string} = parseJson(up).data.vms[0]

    const printed = await targon(['ssh', vm.name, '-N', '-L', '8888:localhost:8888', '-R', '9000:localhost:9000', '-D', '1080', '--json'])
    expect(printed.code, printed.stderr).toBe(0)
    const {argv} = parseJson(printed).data as {argv: string[]}
    const options = argv.slice(0, argv.indexOf(argv.find((arg) => arg.startsWith('ubuntu@'))!))
    expect(options.slice(-7)).toEqual(['-L', '8888:localhost:8888', '-R', '9000:localhost:9000', '-D', '1080', '-N'])

    // A real ssh with a forward and a command: the remote exit code still passes through.
    const port = String(await unusedPort())
    const run = await targon(['ssh', vm.name, '-L', `${port}:localhost:22`, '--', 'exit 4'])
    expect(run.code, run.stderr).toBe(4)

    for (const bad of [
      ['-L', '-oProxyCommand=touch /tmp/x'],
      ['-D', 'a b'],
      ['-N', '--', 'id'],
    ]) {
      const result = await targon(['ssh', vm.name, ...bad])
      expect(result.code, `${bad.join(' ')}: ${result.stderr}`).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }

    expect((await targon(['ssh', '--config', '--fleet', 'fw', '-L', '1:a:2'])).code).toBe(2)
  })
})

describe('targon ssh host keys and options', () => {
  it('reports a key pinned on first contact in --json, restores a lost pin file from the record, and passes the hardening options', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'pin', '--json'], {
      timeoutMs: 120_000,
    })
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]

    const first = await targon(['ssh', vm.name, '--json'])
    expect(first.code, first.stderr).toBe(0)
    const pinned = parseJson(first).data
    expect(pinned.host_key).toMatchObject({fingerprint: expect.stringMatching(/^SHA256:/), new: true})
    for (const option of ['GlobalKnownHostsFile=/dev/null', 'ForwardAgent=no', 'ControlMaster=no', 'ControlPath=none'])
      expect(pinned.argv.join(' '), option).toContain(`-o ${option}`)
    const record = JSON.parse(readFileSync(join(configDir, 'vms', 'acme', `${vm.name}.json`), 'utf8'))
    expect(record.host_key.fingerprint).toBe(pinned.host_key.fingerprint)

    const again = parseJson(await targon(['ssh', vm.name, '--json'])).data
    expect(again.host_key).toEqual({fingerprint: pinned.host_key.fingerprint, new: false})

    // A lost pin file comes back from the record: the same key, not a new first contact.
    rmSync(pinned.known_hosts_file)
    const restored = await targon(['ssh', vm.name, '--json'])
    expect(parseJson(restored).data.host_key).toEqual({fingerprint: pinned.host_key.fingerprint, new: false})
    rmSync(pinned.known_hosts_file)
    expect((await targon(['ssh', vm.name, '--print'])).stderr).toContain(`Restored the host-key pin of ${vm.name} from its local record`)
    expect(readFileSync(pinned.known_hosts_file, 'utf8')).toContain(record.host_key.key)
    const run = await targon(['ssh', vm.name, '--', 'exit 3'])
    expect(run.code, run.stderr).toBe(3)

    const config = await targon(['ssh', '--config', vm.name])
    for (const line of ['GlobalKnownHostsFile /dev/null', 'ForwardAgent no', 'ControlMaster no', 'ControlPath none'])
      expect(config.stdout).toContain(`  ${line}\n`)
  })
})
