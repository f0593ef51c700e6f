/**
 * The one way a test file runs `targon` against the simulator: a config directory and environment of its own, a
 * simulator started and stopped around the tests, and `targon(args, options)` returning the run's exit code, stdout,
 * stderr and its `--json` document. A fixture runs the built CLI as a subprocess (cli.ts), or through oclif in this
 * process (in-process.ts) where a test needs nothing only a process shows.
 */
import {type CliOptions, type CliResult, parseJson, runCli, tempDir} from './cli.js'
import {runInProcess, runningInProcess} from './in-process.js'
import {skippingClock} from './fake-clock.js'
import type {Clock} from '../../src/lib/core/clock.js'
import {simulatorEnv, useFreshSimulator, useSimulatedVms} from './simulator.js'
import type {SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'
import type {VmFarm} from '../vm/farm.js'

type Env = Record<string, string | undefined>

export interface TargonResult extends CliResult {
  /** stdout as the one JSON document of `--json`, checked against the command's schema (throws if it is not). */
  readonly json: Record<string, any>
}

export interface RunOptions extends CliOptions {
  /** Another config directory than the fixture's, for this run. */
  config?: string
  /**
   * Overrides the fixture's choice for this run: false for what only a process shows (start-up). A run of `targon
   * ssh`, one given an option of PROCESS_ONLY, or one started while a run in process is under way, is a process
   * unless it says true.
   */
  inProcess?: boolean
}

/** What only a subprocess run can honour. */
const PROCESS_ONLY = ['cli', 'executable', 'nodeArgs', 'onSpawn', 'shell', 'umask', 'user'] as const

export type Targon = (args: string[], options?: RunOptions) => Promise<TargonResult>

export interface FixtureOptions {
  /**
   * Environment of every run; a run's own `env` wins over it. A function is read at each run: for what is known only
   * once the tests start, such as the address of a server that a hook starts.
   */
  env?: Env | (() => Env)
  /** Options of every subprocess run (e.g. `timeoutMs`); a run's own win over them. */
  defaults?: CliOptions
  /**
   * Runs through oclif in this process, from the sources: no process per run. A run of `targon ssh`, with an option
   * only a process honours, or alongside a run in process, is a process.
   */
  inProcess?: boolean
}

/** Where runs go: read at each run, since a fixture may start a new simulator or config directory per test. */
export interface Target {
  sim: TargonSimulator
  configDir: string
  /** The clock of in-process runs, shared with the simulator (fake-clock.ts); the real one when absent. */
  clock?: Clock
}

/** `targon()` against whatever simulator and config directory `target` names at the time of the run. */
export function targonFor(target: () => Target, fixture: FixtureOptions = {}): Targon {
  return async (args, options = {}) => {
    const {config, inProcess: asked, ...run} = options
    const {clock, configDir, sim} = target()
    const shared = typeof fixture.env === 'function' ? fixture.env() : fixture.env
    const env = simulatorEnv(sim, {TARGON_CONFIG_DIR: config ?? configDir, ...shared, ...run.env})
    const needsProcess = PROCESS_ONLY.filter((option) => run[option] !== undefined || fixture.defaults?.[option] !== undefined)
    if (asked === true && needsProcess.length > 0) throw new Error(`${needsProcess.join(', ')}: needs a process; drop inProcess: true`)
    // The fixture's choice gives way to a run's option that only a process honours (a signal, a user, a pipe), to
    // `targon ssh` (OpenSSH writes to this process's own stdout and stderr, which only a process captures), and to a
    // run in process under way: a run alongside it is a process, since two in one would share stdout.
    const handsOverOutput = args[0] === 'ssh'
    const inProcess = asked ?? (fixture.inProcess === true && needsProcess.length === 0 && !handsOverOutput && !runningInProcess())
    const result = inProcess
      ? await runInProcess(args, {clock, cwd: run.cwd, env, input: run.input})
      : await runCli(args, {...fixture.defaults, ...run, env})
    return withJson(result)
  }
}

function withJson(result: CliResult): TargonResult {
  let json: Record<string, any> | undefined
  return Object.defineProperty(result, 'json', {
    enumerable: false,
    get: () => (json ??= parseJson(result)),
  }) as TargonResult
}

/** A fresh simulator and config directory per test: `setup()` starts them, and the simulator stops after the test. */
export function useFreshFixture(
  fixture: FixtureOptions = {},
): Target & {setup: (options?: SimulatorOptions) => Promise<void>; targon: Targon} {
  const context: ReturnType<typeof useFreshSimulator> & {clock?: Clock} = useFreshSimulator()
  const start = context.setup
  // In process, the commands and the simulator share a clock on which every wait is skipped.
  context.setup = async (options = {}) => {
    const clock = fixture.inProcess && options.clock === undefined ? skippingClock() : undefined
    context.clock = clock
    await start(clock ? {...options, clock: clock.simulator} : options)
  }
  return Object.assign(context, {targon: targonFor(() => context, fixture)})
}

/** Simulated VMs (real sshd hosts, root only) and one config directory, shared by the tests of a file. */
export function useVmFixture(fixture: FixtureOptions & {simulator?: SimulatorOptions} = {}): Target & {farm: VmFarm; targon: Targon} {
  const vms = useSimulatedVms(fixture.simulator)
  const configDir = tempDir('targon-config-')
  return {
    configDir,
    get farm() {
      return vms.farm
    },
    get sim() {
      return vms.sim
    },
    targon: targonFor(() => ({configDir, sim: vms.sim}), fixture),
  }
}
