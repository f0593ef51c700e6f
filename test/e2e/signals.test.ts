/**
 * The CLI alone handles signals (src/lib/cli/interrupt.ts): a dependency that hooks SIGINT, SIGTERM or SIGHUP
 * for itself can turn the first Ctrl-C into an exit without clean-up (conf's file writer once did, whenever a
 * config.json existed). Every command here runs with a preload that records each listener added to the process
 * for a signal or for exit; only the CLI's own and Node's own may appear. A new dependency, or a new code path of
 * an old one, that installs its own fails this test.
 */
import {execFile} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {describe, expect, it} from 'vitest'

import {BIN, ROOT, baseEnv, parseJson, runCli, tempDir} from '../helpers/cli.js'
import {simulatorEnv, useSimulatedVms} from '../helpers/simulator.js'

/** Listeners by function name: the CLI's interrupt guard and ssh's pass-through to its child, and Node's tty and ESM exit handling. */
const ALLOWED = new Set(['onSignal', 'forwardToSsh', 'refreshStdoutOnSigWinch', 'refreshStderrOnSigWinch', 'handleProcessExit'])
const AUDIT = ['--require', join(ROOT, 'test/helpers/listener-audit.cjs')]

const simulated = useSimulatedVms()
const configDir = tempDir('targon-config-')
const audit = join(tempDir('targon-audit-'), 'listeners.ndjson')

const env = () => simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir, TARGON_LISTENER_AUDIT: audit})
const targon = (args: string[]) => runCli(args, {env: env(), nodeArgs: AUDIT, timeoutMs: 120_000})

/** On a terminal (script(1) gives it one), so that listr2 renders and hides the cursor. */
async function onTerminal(args: string[]): Promise<void> {
  const line = [process.execPath, ...AUDIT, BIN, ...args].map((word) => `'${word}'`).join(' ')
  await promisify(execFile)('script', ['-qec', line, '/dev/null'], {env: baseEnv(env()), timeout: 120_000})
}

describe('signal and exit listeners', () => {
  it('no dependency adds one of its own, in any command', async () => {
    expect((await targon(['config', 'set', 'max-price', '1.8'])).code).toBe(0)
    expect((await targon(['config', 'list'])).code).toBe(0)
    expect((await targon(['offers'])).code).toBe(0)
    await onTerminal(['up', 'rtx6000b-small', '--no-bootstrap', '--fleet', 'sig'])
    const up = await targon(['up', 'rtx6000b-small', '--no-bootstrap', '--fleet', 'sig', '--json'])
    expect(up.code, up.stderr).toBe(0)
    const vm = parseJson(up).data.vms[0] as {name: string; uid: string}
    expect((await targon(['status', '--fleet', 'sig'])).code).toBe(0)
    expect((await targon(['exec', '--vms', vm.name, '--', 'true'])).code).toBe(0)
    const file = join(tempDir('targon-audit-cp-'), 'f.txt')
    writeFileSync(file, 'x')
    expect((await targon(['cp', file, `${vm.name}:/home/ubuntu/`])).code).toBe(0)
    expect((await targon(['ssh', vm.name, '--', 'true'])).code).toBe(0)
    expect((await targon(['logs', vm.name, '--tail', '1'])).code).toBe(0)
    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
    expect(simulated.sim.billing()).toEqual([])

    expect(existsSync(audit)).toBe(true)
    const listeners = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {event: string; name: string})
    expect(listeners.filter((listener) => listener.name === 'onSignal').length).toBeGreaterThan(0)
    expect(listeners.filter((listener) => !ALLOWED.has(listener.name))).toEqual([])
  }, 180_000)
})
