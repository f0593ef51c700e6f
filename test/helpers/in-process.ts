/**
 * Runs a command through oclif inside the test process, from the TypeScript sources: the same parsing,
 * envelopes and exit codes as the built CLI, without the cost of a process per run. Subprocess tests
 * (cli.ts) stay for what only a process shows: start-up, signals, pipes, the command_not_found hook.
 *
 * Each run gets what a fresh process would have: a new command built by the factory (cli/factory.ts) with the
 * test's clock, only the environment of baseEnv, a closed non-terminal stdin, non-terminal stdout and stderr, and its
 * own exit code. The sources are loaded once per worker, which serves file after file (vitest.config.ts): the CLI
 * keeps no state in its modules but the exit callbacks of a second signal, which only a process can receive. Runs
 * must not overlap: tests in a file run one after another.
 */
import {Console} from 'node:console'
import {Readable} from 'node:stream'
import {Config, Errors} from '@oclif/core'

import type {Factory} from '../../src/lib/cli/factory.js'
import type {Clock} from '../../src/lib/core/clock.js'

import {type CliOptions, type CliResult, ROOT, baseEnv} from './cli.js'

let loadedConfig: Promise<Config> | undefined

/** The project's oclif Config (package.json, manifest, plugins); its commands are loaded from src, not dist. */
function projectConfig(): Promise<Config> {
  loadedConfig ??= Config.load({root: ROOT})
  return loadedConfig
}

export interface InProcessOptions extends Pick<CliOptions, 'cwd' | 'env' | 'input'> {
  /** The clock the command's factory gives it (the simulator's, so that both see one time); the real one by default. */
  clock?: Clock
}

/** Whether a run is under way: its stdout and stderr are this process's, so a second one at once would mix them. */
let running = false

/** Whether a run in process is under way (a fixture then runs the next one as a process). */
export const runningInProcess = (): boolean => running

export async function runInProcess(argv: string[], options: InProcessOptions = {}): Promise<CliResult> {
  if (running) throw new Error('two runs in process at once: run one of them as a process')
  running = true
  try {
    return await runAlone(argv, options)
  } finally {
    running = false
  }
}

async function runAlone(argv: string[], options: InProcessOptions): Promise<CliResult> {
  const config = await projectConfig()
  const {COMMANDS} = await import('../../src/cli.js')
  const {id, args} = commandOf(argv, Object.keys(COMMANDS))
  const command = COMMANDS[id as keyof typeof COMMANDS]
  // oclif sets the id when it loads a command from the manifest; the envelope's "command" comes from it.
  command.id = id
  const cached = config.findCommand(id, {must: true})

  let stdout = ''
  let stderr = ''
  const restore = [
    overrideEnv(baseEnv(options.env)),
    inDirectory(options.cwd),
    override(
      process.stdout,
      'write',
      writer((text) => (stdout += text)),
    ),
    override(
      process.stderr,
      'write',
      writer((text) => (stderr += text)),
    ),
    override(process.stdout, 'isTTY', false),
    override(process.stderr, 'isTTY', false),
    override(process, 'stdin', Readable.from([Buffer.from(options.input ?? '')])),
    // oclif prints through console.log and console.error, which vitest intercepts.
    override(globalThis, 'console', new Console({colorMode: false, stderr: process.stderr, stdout: process.stdout})),
  ]
  const exitCodeBefore = process.exitCode
  process.exitCode = undefined
  let code: number
  try {
    await config.runCommand(id, args, {...cached, load: async () => withClock(command, options.clock)})
    // BaseCommand.catch turns every error but an exit into process.exitCode, which bin/start.js exits with.
    code = Number(process.exitCode ?? 0)
  } catch (error) {
    // What oclif's handler does in the real CLI: an exit's own code, anything else printed and exit 1.
    if (!(error instanceof Errors.ExitError)) stderr += `${String(error)}\n`
    code = (error as {oclif?: {exit?: number}}).oclif?.exit ?? 1
  } finally {
    // Node prints a warning (to stderr) on the next tick: let it arrive while the run still owns stderr.
    await new Promise((resolve) => setImmediate(resolve))
    process.exitCode = exitCodeBefore
    for (const undo of restore.reverse()) undo()
  }

  return {code, signal: null, stderr, stdout}
}

/** The command as the test hands it its factory: the process's, but for the clock. */
function withClock<C extends new (...args: any[]) => {factory: Factory}>(command: C, clock: Clock | undefined): C {
  if (clock === undefined) return command
  const own: Clock = clock
  return class extends command {
    constructor(...args: any[]) {
      super(...args)
      this.factory = {...this.factory, clock: own}
    }
  }
}

/** The command is the longest run of leading words that names one ("config set org x" → config:set). */
function commandOf(argv: string[], ids: string[]): {id: string; args: string[]} {
  for (let length = argv.length; length > 0; length--) {
    const id = argv.slice(0, length).join(':')
    if (ids.includes(id)) return {args: argv.slice(length), id}
  }

  throw new Error(`no command in ${JSON.stringify(argv)}: run unknown commands with runCli`)
}

function writer(sink: (text: string) => void) {
  return (
    chunk: string | Uint8Array,
    encoding?: BufferEncoding | ((error?: Error | null) => void),
    callback?: (error?: Error | null) => void,
  ): boolean => {
    sink(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))
    const done = typeof encoding === 'function' ? encoding : callback
    if (done) process.nextTick(done)
    return true
  }
}

/** Sets a property for the duration of a run; the returned function puts back exactly what was there. */
function override(target: object, key: string, value: unknown): () => void {
  const before = Object.getOwnPropertyDescriptor(target, key)
  Object.defineProperty(target, key, {configurable: true, enumerable: before?.enumerable ?? true, value, writable: true})
  return () => {
    if (before) Object.defineProperty(target, key, before)
    else Reflect.deleteProperty(target, key)
  }
}

/** The run's working directory, as a subprocess's cwd (the forks pool runs tests in processes, where chdir works). */
function inDirectory(dir: string | undefined): () => void {
  if (dir === undefined) return () => {}
  const before = process.cwd()
  process.chdir(dir)
  return () => process.chdir(before)
}

/** The run's environment is baseEnv's alone, as in the subprocess: e.g. vitest's NODE_ENV=test would make oclif warn. */
function overrideEnv(env: Record<string, string>): () => void {
  const replace = (values: NodeJS.ProcessEnv) => {
    for (const key of Object.keys(process.env)) delete process.env[key]
    Object.assign(process.env, values)
  }
  const before = {...process.env}
  replace(env)
  return () => replace(before)
}
