/**
 * Hardening against what a new user runs into, where only a process shows it: closed pipes and full disks, every
 * interrupting signal, concurrent runs, stray arguments and mistyped commands, a terminal without cursor control. Each
 * test runs the built CLI against the simulator and checks the exit code, the JSON envelope and the simulator's ledger.
 * The rest is checked in process: in test/cmd/hardening.test.ts, and malformed settings and input in
 * test/cmd/settings.test.ts.
 */
import {describe, expect, it} from 'vitest'

import {CONFIG_FILE_VARIANTS, type CliResult, parseJson, signalWhen, tempDir, waitFor} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture()
const {targon} = ctx
const setup = ctx.setup

/** A bash line for a run's `shell`: targon's output into a pipe that closes after one line. */
const intoHead = (command: string) => `${command} 2>&1 | head -1`

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

describe('output that cannot be written', () => {
  it('a closed stderr pipe does not stop up from cleaning up, nor down from deleting everything', async () => {
    await setup({provisioning: 'error'})
    const failed = await targon(UP, {shell: intoHead})
    expect(failed.code, failed.stdout).toBe(5)
    expect(ctx.sim.live()).toEqual([])

    await ctx.sim.stop()
    await setup()
    for (let index = 0; index < 3; index++) expect((await targon([...UP, '--json'])).code).toBe(0)
    expect(ctx.sim.live()).toHaveLength(3)
    const down = await targon(['down', '--all', '--parallel', '1'], {shell: intoHead})
    expect(down.code, down.stdout).toBe(0)
    expect(ctx.sim.live()).toEqual([])
  })

  it('a full disk behind stdout or stderr is not fatal, and --version into a closed pipe prints no stack trace', async () => {
    await setup()
    const up = await targon(UP, {shell: (command) => `${command} 2>/dev/full >/dev/full`})
    expect(up.code).toBe(0)
    expect(ctx.sim.live()).toHaveLength(1)
    const down = await targon(['down', '--all', '--json'], {shell: (command) => `${command} >/dev/full`})
    expect(down.code).toBe(0)
    expect(ctx.sim.live()).toEqual([])

    const version = await targon(['--version'], {shell: (command) => `${command} | true`})
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

describe('concurrent runs with one name', () => {
  it('two up --name same from two config directories end with one VM, reported by both', async () => {
    await setup()
    // Both runs look the name up before either create is committed: the first create waits for the second.
    const bothSent = waitFor(() => ctx.sim.requests('POST', /\/workloads$/).length >= 2, 60_000)
    ctx.sim.inject({holdUntil: bothSent, method: 'POST', path: /\/workloads$/, times: 2})
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
  it('a terminal without cursor control or width gets plain progress lines', async () => {
    await setup()
    for (const [term, setup] of [
      ['dumb', 'stty cols 120'],
      ['xterm', 'stty cols 0'],
    ]) {
      // script(1) runs targon on a pseudo-terminal, as a user's shell would.
      const result = await targon(UP, {env: {TERM: term}, shell: (command) => `script -qec "${setup}; ${command}" /dev/null`})
      expect(result.code, result.stdout).toBe(0)
      expect(result.stdout).not.toContain('\u001B[')
      expect(result.stdout).toMatch(/^\S+ register\r?$/m)
    }
  })
})
