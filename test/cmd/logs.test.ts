import {describe, expect, it} from 'vitest'

import {CONFIG_FILE_VARIANTS, errorLines, parseJson, waitFor} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {targon} = ctx

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

async function upOne(): Promise<{uid: string; name: string}> {
  const up = await targon([...UP, '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

describe('targon logs', () => {
  it("prints a VM's serial console, its last lines with --tail, and the lines as JSON", async () => {
    await ctx.setup()
    const vm = await upOne()

    const all = await targon(['logs', vm.name])
    expect(all.code, all.stderr).toBe(0)
    expect(all.stdout).toContain('Linux version')
    expect(all.stdout.trimEnd().split('\n').at(-1)).toBe(`${vm.name} login:`)
    expect(ctx.sim.requests('GET', '/logs').map((request) => request.query.type)).toEqual(['serial'])

    const tail = await targon(['logs', vm.uid, '--tail', '2'])
    expect(tail.code, tail.stderr).toBe(0)
    expect(tail.stdout).toBe(`Ubuntu 24.04.1 LTS ${vm.name} ttyS0\n${vm.name} login: \n`)

    const json = await targon(['logs', vm.name, '--tail', '3', '--json'])
    expect(json.code, json.stderr).toBe(0)
    const doc = parseJson(json)
    expect(doc.data).toMatchObject({name: vm.name, status: 'running', tail: 3, type: 'serial', uid: vm.uid})
    expect(doc.data.lines).toHaveLength(3)
    expect(doc.data.lines.at(-1)).toBe(`${vm.name} login: `)
  })

  it('shows the kernel panic of a crashed VM, and reads a console that the API answers as JSON', async () => {
    await ctx.setup({consoleFormat: 'json'})
    const vm = await upOne()
    ctx.sim.crash(vm.uid)
    const logs = await targon(['logs', vm.name, '--tail', '2', '--json'])
    expect(logs.code, logs.stderr).toBe(0)
    const doc = parseJson(logs)
    expect(doc.data.status).toBe('error')
    expect(doc.data.lines[0]).toContain('Kernel panic - not syncing')
  })

  it('refuses an unknown VM (exit 4) and a bad --tail (exit 2) with one line', async () => {
    await ctx.setup()
    await upOne()
    const unknown = await targon(['logs', 'tcli-default-nosuchvm'])
    expect(unknown.code).toBe(4)
    expect(unknown.stdout).toBe('')
    expect(errorLines(unknown.stderr)).toHaveLength(1)
    expect(unknown.stderr).toContain('no VM named or with uid tcli-default-nosuchvm')

    const json = await targon(['logs', 'nosuchvm', '--json'])
    expect(json.code).toBe(4)
    expect(parseJson(json).error.code).toBe('NOT_FOUND')

    for (const bad of [
      ['--tail', '-1'],
      ['--tail', 'ten'],
      ['--follow', '--json'],
    ]) {
      const result = await targon(['logs', 'whatever', ...bad])
      expect(result.code, `${bad.join(' ')}: ${result.stderr}`).toBe(2)
      expect(result.stderr.trim().split('\n')).toHaveLength(1)
    }

    expect((await targon(['logs'])).code).toBe(2)
  })

  for (const variant of CONFIG_FILE_VARIANTS)
    it(`--follow prints new console lines as they come, and Ctrl-C exits 130 (${variant.label})`, async () => {
      await ctx.setup()
      variant.prepare(ctx.configDir)
      const vm = await upOne()
      const follow = await targon(['logs', vm.name, '--follow', '--tail', '1'], {
        inProcess: false,
        onSpawn: (child) => {
          void (async () => {
            await waitFor(() => ctx.sim.requests('GET', '/logs').length >= 1)
            ctx.sim.appendConsole(vm.uid, 'job 1 started', 'job 1 done')
            await waitFor(() => ctx.sim.requests('GET', '/logs').length >= 3)
            child.kill('SIGINT')
          })()
        },
        timeoutMs: 30_000,
      })
      expect(follow.code, follow.stderr).toBe(130)
      expect(follow.stdout).toBe(`${vm.name} login: \njob 1 started\njob 1 done\n`)
      // Stopping is the normal end of --follow: said as such, not as an error with a hint.
      expect(follow.stderr).toContain('Stopped following (SIGINT).')
      expect(follow.stderr).not.toContain('Error:')
    })

  it('--follow ends when the VM is deleted', async () => {
    await ctx.setup()
    const vm = await upOne()
    const follow = await targon(['logs', vm.uid, '--follow', '--tail', '0'], {
      inProcess: false,
      onSpawn: () => {
        void waitFor(() => ctx.sim.requests('GET', '/logs').length >= 2).then(() => ctx.sim.deleteExternally(vm.uid))
      },
      timeoutMs: 30_000,
    })
    expect(follow.code, follow.stderr).toBe(0)
    expect(follow.stdout).toBe('')
    expect(follow.stderr).toContain('no more console output')
  })

  it('up: a VM that errors while provisioning fails with its last console lines', async () => {
    await ctx.setup({provisioning: 'error'})
    const up = await targon([...UP, '--json'])
    expect(up.code).toBe(5)
    const doc = parseJson(up)
    expect(doc.error.details.console_tail.at(-1)).toBe('[    2.500640] reboot: System halted')
    expect(doc.error.hint).toContain('reboot: System halted')
    expect(doc.error.hint).toContain('targon logs')
    expect(ctx.sim.billing()).toEqual([])
  })

  it('up: a VM whose SSH never opens fails with its last console lines', async () => {
    await ctx.setup()
    // The simulator's VMs answer on 127.0.0.1:22, where nothing listens here.
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--timeout', '4s', '--json'], {timeoutMs: 60_000})
    // SSH_FAILED once the connection is refused for good, or TIMEOUT when --timeout ends the wait first.
    expect([6, 7], up.stdout + up.stderr).toContain(up.code)
    const doc = parseJson(up)
    expect(doc.error.details.console_tail.at(-1)).toMatch(/login: $/)
    expect(doc.error.hint).toContain('targon logs')
    expect(ctx.sim.billing()).toEqual([])
  })
})
