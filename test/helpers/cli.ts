/**
 * Runs the built CLI (bin/run.js) as a subprocess, the way a user or a cron job does,
 * with an isolated HOME and config directory.
 */
import {type ChildProcess, execFileSync, spawn, spawnSync} from 'node:child_process'
import {chmodSync, cpSync, mkdirSync, mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import * as z from 'zod'
import {type CommandId, DATA_SCHEMAS, ErrorEnvelopeSchema, successEnvelope} from '../../src/lib/cli/contract.js'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BIN = join(ROOT, 'bin', 'run.js')

export interface CliResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface CliOptions {
  env?: Record<string, string | undefined>
  input?: string
  timeoutMs?: number
  /** The working directory (default: this process's). */
  cwd?: string
  /** Options for node itself, before the CLI's path (e.g. --require). */
  nodeArgs?: string[]
  /** Called once the process has started, e.g. to send it a signal later. */
  onSpawn?: (child: ChildProcess) => void
  /** Runs the CLI as this local user (the tests run as root), from a copy of it that any user can read. */
  user?: string
  /** The umask the CLI runs under, e.g. '077'. */
  umask?: string
  /** The package folder of the CLI to run (a copy of the built one, see readableCli); the checkout's by default. */
  cli?: string
  /** An executable to run in place of node and bin/run.js: e.g. the `targon` that a global install links. */
  executable?: string
  /**
   * Runs the CLI inside a bash line, e.g. with its output redirected: given the CLI's command line, quoted, it returns
   * the line, such as `${command} 2>&1 | head -1`. The run's exit code is that of the first command of the line's last
   * pipeline.
   */
  shell?: (command: string) => string
}

/**
 * The second local user of the tests (scripts/prerequisites.sh creates it and never removes it): the "colleague" on
 * a shared machine who creates files and directories before the user's own runs.
 */
export const OTHER_USER = 'targon-other'

let readableCopy: string | undefined
/**
 * A copy of the built CLI (its runtime files and production dependencies) in a directory any user can read: the
 * checkout itself may sit where only root can read.
 */
export function readableCli(): string {
  if (readableCopy) return readableCopy
  const copy = mkdtempSync(join(tmpdir(), 'targon-cli-copy-'))
  for (const entry of ['bin', 'dist', 'package.json', 'oclif.manifest.json'])
    cpSync(join(ROOT, entry), join(copy, entry), {recursive: true})
  // npm ls exits 1 over problems of packages it does not list (dev dependencies of a dependency, in a checkout whose
  // node_modules is a link); its list is still the runtime's.
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {cwd: ROOT, encoding: 'utf8'})
  const runtime = listed.stdout
  if (!runtime.startsWith(ROOT.replace(/\/$/, ''))) throw new Error(`npm ls listed nothing: ${listed.stderr}`)
  for (const dir of runtime.split('\n').filter((line) => line.startsWith(join(ROOT, 'node_modules'))))
    cpSync(dir, join(copy, relative(ROOT, dir)), {recursive: true})
  execFileSync('chmod', ['-R', 'a+rX', copy])
  chmodSync(copy, 0o755)
  readableCopy = copy
  return copy
}

/** A directory for the other user: created by root, then handed over, as if that user had made it. */
export function otherUsersDir(prefix = 'targon-theirs-', mode = 0o700): string {
  const dir = tempDir(prefix)
  execFileSync('chown', [`${OTHER_USER}:${OTHER_USER}`, dir])
  chmodSync(dir, mode)
  return dir
}

export function tempDir(prefix = 'targon-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

let compileCache: string | undefined
/**
 * The CLI's compile cache (bin/start.js) that the runs of this test process share: each run has a HOME of its own,
 * where a cache of its own would make every run a cold start (about 0.2 s more CPU, a few hundred runs a suite). A
 * test of the cache itself gives XDG_CACHE_HOME; another user's run does not use a cache that root owns.
 */
function sharedCompileCache(): string {
  compileCache ??= tempDir('targon-compile-cache-')
  return compileCache
}

/** A minimal environment: nothing from the developer's own Targon setup leaks in. */
export function baseEnv(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const home = tempDir('targon-home-')
  const env: Record<string, string | undefined> = {
    HOME: home,
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
    PATH: process.env.PATH,
    TARGON_CONFIG_DIR: join(home, 'config'),
    XDG_CACHE_HOME: sharedCompileCache(),
    ...overrides,
  }
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined))
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const cli = options.cli ?? (options.user ? readableCli() : undefined)
    let argv = options.executable
      ? [options.executable, ...args]
      : [process.execPath, ...(options.nodeArgs ?? []), cli ? join(cli, 'bin', 'run.js') : BIN, ...args]
    if (options.shell) argv = ['bash', '-c', `${options.shell(argv.map(shellQuote).join(' '))}\nexit \${PIPESTATUS[0]}`]
    if (options.umask) argv = ['sh', '-c', `umask ${options.umask} && exec "$@"`, 'sh', ...argv]
    if (options.user) argv = ['runuser', '-u', options.user, '--', ...argv]
    const child = spawn(argv[0] as string, argv.slice(1), {
      cwd: options.cwd,
      env: baseEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    // Decoded across chunks: a chunk's own toString() would garble a character split between two.
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => (stdout += chunk))
    child.stderr.on('data', (chunk: string) => (stderr += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({code, signal, stderr, stdout})
    })
    child.stdin.end(options.input ?? '')
    options.onSpawn?.(child)
  })
}

const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The lines of stderr but the one that says which org and profile a command acts on: what a refusal's "one line"
 * rule is about.
 */
export function errorLines(stderr: string): string[] {
  return stderr
    .trim()
    .split('\n')
    .filter((line) => !/^org: \S+ \(profile: \S+\)$/.test(line))
}

/** Parses stdout as exactly one JSON document, and validates it against the command's published schema. */
export function parseJson<T = Record<string, any>>(result: CliResult): T {
  let doc: {ok?: boolean; command?: string}
  try {
    doc = JSON.parse(result.stdout) as typeof doc
  } catch {
    throw new Error(`stdout is not one JSON document:\n${result.stdout}\nstderr:\n${result.stderr}`)
  }

  const schema =
    doc.ok === false ? ErrorEnvelopeSchema : successEnvelope(String(doc.command), DATA_SCHEMAS[doc.command as CommandId] ?? z.never())
  const checked = schema.safeParse(doc)
  if (!checked.success)
    throw new Error(`--json output breaks the schema of ${doc.command}: ${z.prettifyError(checked.error)}\n${result.stdout}`)
  return doc as T
}

/**
 * Signal tests run twice: with a config directory that holds a config.json (conf, which loads with it, once brought
 * its own signal handlers) and with one that does not.
 */
export const CONFIG_FILE_VARIANTS = [
  {label: 'without config.json', prepare: (_configDir: string) => {}},
  {label: 'with config.json', prepare: (configDir: string) => writeConfigFile(configDir, {image: 'ubuntu-24-04-lts-595'})},
] as const

/** Writes config.json (0600) into a config directory (0700), creating it if need be. */
export function writeConfigFile(configDir: string, settings: Record<string, unknown>): void {
  mkdirSync(configDir, {mode: 0o700, recursive: true})
  writeFileSync(join(configDir, 'config.json'), JSON.stringify(settings), {mode: 0o600})
}

/** For onSpawn: sends `signal` to the CLI once `ready` holds (and `extraDelayMs` more have passed). */
export function signalWhen(ready: () => boolean, signal: NodeJS.Signals = 'SIGINT', extraDelayMs = 0) {
  return (child: ChildProcess) => {
    const timer = setInterval(() => {
      if (!ready()) return
      clearInterval(timer)
      setTimeout(() => child.kill(signal), extraDelayMs)
    }, 50)
    child.on('close', () => clearInterval(timer))
  }
}

/** Waits until `condition` holds, checking every 50 ms. */
export async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
