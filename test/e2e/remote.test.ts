/**
 * ssh, exec and cp on simulated VMs (real sshd): one rule for the words after --, Ctrl-C that ends a silent remote
 * command, the reasons exec gives for each failed VM, the key and directory checks every user of the key makes,
 * ssh's child and its forwarded port ending with targon, Host entries for one VM, and a crashed VM shown as billing.
 */
import {execFile, execFileSync} from 'node:child_process'
import {chmodSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {type AddressInfo, connect, createServer} from 'node:net'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, CONFIG_FILE_VARIANTS, baseEnv, parseJson, tempDir, waitFor} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {simulatorEnv} from '../helpers/simulator.js'

const simulated = useVmFixture({inProcess: true, defaults: {timeoutMs: 90_000}})
const {configDir, targon} = simulated
let vm: {name: string; uid: string}

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'rmt', '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vm = parseJson(up).data.vms[0]
  // The host key is pinned on first contact.
  expect((await targon(['exec', '--vms', vm.name, '--', 'true'])).code).toBe(0)
}, 120_000)

afterAll(async () => {
  await targon(['down', '--all', '--json'])
})

const processesMatching = (pattern: string) => {
  try {
    return execFileSync('pgrep', ['-f', pattern], {encoding: 'utf8'}).trim().split('\n').filter(Boolean)
  } catch {
    return []
  }
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const done = (open: boolean) => {
      socket.destroy()
      resolve(open)
    }

    socket.once('connect', () => done(true)).once('error', () => done(false))
    socket.setTimeout(1000, () => done(false))
  })

/** A port nothing listens on now, as the system hands them out. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })

describe('the words after --', () => {
  it('run the same command in ssh and exec: one line for the remote shell', async () => {
    for (const words of [['echo a  b | tr a-z A-Z'], ['sh', '-c', 'cd /tmp && pwd']]) {
      const ssh = await targon(['ssh', vm.name, '--', ...words])
      const exec = await targon(['exec', '--vms', vm.name, '--', ...words])
      expect(ssh.code, ssh.stderr).toBe(0)
      expect(exec.code, exec.stderr).toBe(0)
      expect(exec.stdout).toBe(`${vm.name} | ${ssh.stdout}`)
    }

    // As OpenSSH: "sh -c cd /tmp && pwd" runs cd in the inner shell and pwd in the outer one, in the home directory.
    expect((await targon(['ssh', vm.name, '--', 'sh', '-c', 'cd /tmp && pwd'])).stdout).toBe('/home/ubuntu\n')
  })
})

describe('exec', () => {
  for (const variant of CONFIG_FILE_VARIANTS)
    it(`Ctrl-C ends a silent remote command at once, with exit 130 and the results (${variant.label})`, async () => {
      variant.prepare(configDir)
      let sentAt = 0
      const result = await targon(['exec', '--vms', vm.name, '--json', '--', 'sleep 47'], {
        onSpawn: (child) => {
          void waitFor(() => processesMatching('^sleep 47$').length > 0).then(() => {
            sentAt = Date.now()
            child.kill('SIGINT')
          })
        },
      })
      const tookMs = Date.now() - sentAt
      expect(result.code, result.stdout + result.stderr).toBe(130)
      expect(tookMs).toBeLessThan(5000)
      expect(parseJson(result).data.results).toMatchObject([{error: 'interrupted: the remote command was sent SIGTERM', exit_code: null}])
      await waitFor(() => processesMatching('^sleep 47$').length === 0, 5000)
    })

  it("shows a VM's control characters escaped, unless --raw; --json keeps them exact", async () => {
    const script = "printf '\\033]0;title\\007ok\\n'"
    const shown = await targon(['exec', '--vms', vm.name, '--', script])
    expect(shown.stdout).toBe(`${vm.name} | \\x1b]0;title\\x07ok\n`)
    const raw = await targon(['exec', '--vms', vm.name, '--raw', '--', script])
    expect(raw.stdout).toBe(`${vm.name} | \u001b]0;title\u0007ok\n`)
    const json = parseJson(await targon(['exec', '--vms', vm.name, '--json', '--', script]))
    expect(json.data.results[0].tail).toEqual(['\u001b]0;title\u0007ok'])
  })

  it('says in text mode why each VM failed: its exit code, or why the command could not run', async () => {
    const failed = await targon(['exec', '--vms', vm.name, '--', 'exit 3'])
    expect(failed.code).toBe(12)
    expect(failed.stderr).toContain(`${vm.name}: exit code 3\n`)

    const pin = join(configDir, 'known_hosts.d', vm.uid)
    const original = readFileSync(pin, 'utf8')
    writeFileSync(
      pin,
      original.replace(/ssh-ed25519 \S+/, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk8hW1WvWq0cJ8q6yG7Yb8kQ2m4Zx3n5p7r9t1v3x5z'),
    )
    try {
      const mismatch = await targon(['exec', '--vms', vm.name, '--', 'true'])
      expect(mismatch.code).toBe(12)
      expect(mismatch.stderr).toMatch(new RegExp(`${vm.name}: HOST_KEY_MISMATCH: `))
    } finally {
      writeFileSync(pin, original, {mode: 0o600})
    }
  })
})

describe('keys and directories', () => {
  const file = join(tempDir('targon-remote-cp-'), 'f.txt')
  writeFileSync(file, 'hello')
  const users = () => [
    ['exec', '--vms', vm.name, '--', 'true'],
    ['cp', file, `${vm.name}:/tmp/`],
    ['ssh', vm.name, '--', 'true'],
    ['ssh', vm.name, '--print'],
  ]

  it('every use of the private key refuses one readable by others (exit 3), as up does', async () => {
    const key = join(configDir, 'keys', 'id_ed25519')
    chmodSync(key, 0o644)
    try {
      for (const args of users()) {
        const result = await targon(args)
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(3)
        expect(result.stderr).toContain(`chmod 600 ${key}`)
      }

      const fleet = await targon(['status', '--fleet', 'rmt', '--dstack-fleet', '--json'])
      expect(fleet.code).toBe(3)
    } finally {
      chmodSync(key, 0o600)
    }
  })

  it('a config directory, keys/ or known_hosts.d/ that others can write is refused with the chmod, never changed', async () => {
    for (const dir of [configDir, join(configDir, 'keys'), join(configDir, 'known_hosts.d')]) {
      const before = statSync(dir).mode & 0o777
      chmodSync(dir, 0o777)
      try {
        const result = await targon(['exec', '--vms', vm.name, '--', 'true'])
        expect(result.code, result.stderr).toBe(3)
        expect(result.stderr).toContain(`chmod go-w ${dir}`)
        expect(statSync(dir).mode & 0o777).toBe(0o777)
      } finally {
        chmodSync(dir, before)
      }
    }
  })
})

describe('ssh', () => {
  for (const variant of CONFIG_FILE_VARIANTS)
    it(`SIGTERM ends the ssh child and its forwarded port with targon (${variant.label})`, async () => {
      variant.prepare(configDir)
      const port = await freePort()
      let forwarded = false
      const result = await targon(['ssh', vm.name, '-N', '-L', `127.0.0.1:${port}:localhost:22`], {
        onSpawn: (child) => {
          void (async () => {
            // Bounded: should the forward never come up, the run is ended and the assertions below say so.
            const deadline = Date.now() + 30_000
            while (!(await listening(port)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100))
            forwarded = Date.now() < deadline
            child.kill(forwarded ? 'SIGTERM' : 'SIGKILL')
          })()
        },
      })
      expect(forwarded, result.stderr).toBe(true)
      expect(result.code, result.stderr).toBe(143)
      expect(await listening(port)).toBe(false)
      expect(processesMatching(`-L 127.0.0.1:${port}:localhost:22`)).toEqual([])
    })

  it('--config VM prints that VM alone; redirected into a file, the file is made 0600', async () => {
    const one = await targon(['ssh', '--config', vm.name, '--fleet', 'rmt'])
    expect(one.code, one.stderr).toBe(0)
    expect(one.stdout.match(/^Host /gm)).toHaveLength(1)

    const out = join(tempDir('targon-sshconf-'), 'targon.conf')
    writeFileSync(out, 'Host stale\n', {mode: 0o644})
    const line = `"${process.execPath}" "${BIN}" ssh --config --fleet rmt > "${out}"`
    await promisify(execFile)('bash', ['-c', line], {env: baseEnv(simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir}))})
    expect(statSync(out).mode & 0o777).toBe(0o600)
    expect(readFileSync(out, 'utf8')).not.toContain('Host stale')
    expect(readFileSync(out, 'utf8')).toContain(`HostKeyAlias targon-${vm.uid}`)
  })
})

describe('cp', () => {
  it('takes ~/ as the home directory on the VM', async () => {
    const file = join(tempDir('targon-tilde-'), 'tilde.txt')
    writeFileSync(file, 'home')
    const result = await targon(['cp', file, `${vm.name}:~/tilde.txt`])
    expect(result.code, result.stderr).toBe(0)
    expect(simulated.farm.vm(vm.uid).readFile('/home/ubuntu/tilde.txt')).toBe('home')
  })
})

describe('a crashed VM on the machine that created it', () => {
  it('is shown billing (its history shows no delete), counted in the totals, and ssh says to delete it', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', 'crash', '--json'])
    const crashed = parseJson(up).data.vms[0] as {name: string; uid: string}
    simulated.sim.crash(crashed.uid)
    const status = parseJson(await targon(['status', '--fleet', 'crash', '--json']))
    expect(status.data.vms).toMatchObject([{billing: true, billing_assumed: false, status: 'error', uid: crashed.uid}])
    expect(status.data.totals).toMatchObject({billing_count: 1, unknown_billing_count: 0})
    expect(status.warnings.join('\n')).toContain(`targon down ${crashed.uid}`)

    const ssh = await targon(['ssh', crashed.name, '--json'])
    expect(ssh.code).toBe(5)
    expect(parseJson(ssh).error.hint).toContain(`targon down ${crashed.name}`)
    // From another config directory the same record is known as crashed too: the server's history says so.
    const elsewhere = parseJson(
      await targon(['status', '--fleet', 'crash', '--json'], {env: {TARGON_CONFIG_DIR: tempDir('targon-other-')}}),
    )
    expect(elsewhere.data.vms).toMatchObject([{billing: true, billing_assumed: false}])
    expect((await targon(['down', crashed.name, '--json'])).code).toBe(0)
  })
})
