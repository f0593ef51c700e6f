/**
 * The CLI alone handles signals (src/lib/cli/interrupt.ts): a dependency that hooks SIGINT, SIGTERM or SIGHUP
 * for itself can turn the first Ctrl-C into an exit without clean-up (conf's file writer once did, whenever a
 * config.json existed). Every command here runs with a preload that records each listener added to the process
 * for a signal or for exit; only the CLI's own and Node's own may appear. A new dependency, or a new code path of
 * an old one, that installs its own fails this test.
 */
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {ROOT, parseJson, tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'

/** Listeners by function name: the CLI's interrupt guard and ssh's pass-through to its child, and Node's tty and ESM exit handling. */
const ALLOWED = new Set(['onSignal', 'forwardToSsh', 'refreshStdoutOnSigWinch', 'refreshStderrOnSigWinch', 'handleProcessExit'])
const AUDIT = ['--require', join(ROOT, 'test/helpers/listener-audit.cjs')]

const audit = join(tempDir('targon-audit-'), 'listeners.ndjson')
const simulated = useVmFixture({defaults: {nodeArgs: AUDIT, timeoutMs: 120_000}, env: {TARGON_LISTENER_AUDIT: audit}})
const {targon} = simulated

/** On a terminal (script(1) gives it one), so that listr2 renders and hides the cursor. */
const onTerminal = (command: string) => `script -qec "${command}" /dev/null`

describe('signal and exit listeners', () => {
  it('no dependency adds one of its own, in any command', async () => {
    expect((await targon(['config', 'set', 'max-price', '1.8'])).code).toBe(0)
    expect((await targon(['config', 'list'])).code).toBe(0)
    expect((await targon(['offers'])).code).toBe(0)
    expect((await targon(['up', 'rtx6000b-small', '--no-bootstrap', '--fleet', 'sig'], {shell: onTerminal})).code).toBe(0)
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
