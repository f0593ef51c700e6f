/**
 * The base of every command: global flags, the JSON envelopes, and the one place where
 * any error is turned into a TargonError, an exit code and a single line (or envelope).
 */
import {Command, Errors, Flags, type Interfaces} from '@oclif/core'

import {type CommandId, type CommandResult, ERROR_SCHEMA_VERSION, type ErrorEnvelope, schemaVersion} from './contract.js'
import {resolveOrg} from '../adapters/targon/org.js'
import {SettingsResolver} from '../adapters/settings/resolve.js'
import {LocalState} from '../adapters/state/local-state.js'
import type {NotifyEvent} from '../adapters/notify/notify.js'
import type {TargonClient} from '../adapters/targon/client.js'
import {type Factory, processFactory} from './factory.js'
import {guardInterrupts} from './interrupt.js'
import {type NotifyFacts, RunReporter} from './reporter.js'
import {TargonError, asTargonError, bugReport, isTargonError} from '../core/errors.js'
import {REAL_CLOCK} from '../core/clock.js'
import {BUGS_URL, VERSION} from '../core/version.js'
import type {RunContext} from '../workflows/run-context.js'
import type {FetchFailingNotice} from '../workflows/job/jobs-done.js'
import type {RunEvents} from '../adapters/events/run-events.js'
import {printable} from '../core/output.js'
import {OwnedByAnother, sudoHint} from '../adapters/state/trust.js'
import {newHistoryBudget} from '../domain/deletion/history.js'

/** The flags of the commands whose run can be followed event by event (up, down, exec, cp). */
export const EVENT_FLAGS = {
  events: Flags.option({options: ['ndjson'] as const})({
    summary: 'Stream the events of the run as JSON lines on stderr (then stderr carries nothing else, and no prompt is shown).',
  }),
  'events-file': Flags.string({summary: 'Write the events of the run as JSON lines to this file (created 0600, replaced if it exists).'}),
}

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>
export type BaseArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

/**
 * `Id` names the command in the JSON contract: the compiler then holds its run to the result its schema describes.
 */
export abstract class BaseCommand<T extends typeof Command, Id extends CommandId> extends Command {
  static baseFlags = {
    help: Flags.help({char: 'h', helpGroup: 'GLOBAL', summary: 'Show this help.'}),
    // TARGON_ORG is read by resolveOrg, not by oclif: a bad value there is a configuration error, not a usage one.
    org: Flags.string({
      helpGroup: 'GLOBAL',
      summary: 'Targon organization slug (default: TARGON_ORG, then config, then the only org of the API key).',
    }),
    // TARGON_PROFILE is read with the settings, for the same reason.
    profile: Flags.string({
      helpGroup: 'GLOBAL',
      summary: 'The profile of the config file to use: its API key, org, owner and defaults (default: TARGON_PROFILE, then config use).',
    }),
    verbose: Flags.boolean({
      default: false,
      aliases: ['debug'],
      helpGroup: 'GLOBAL',
      summary: 'Log HTTP requests and other diagnostics to stderr (secrets redacted).',
    }),
  }

  static enableJsonFlag = true

  protected flags!: BaseFlags<T>
  protected args!: BaseArgs<T>
  /** All positional arguments (for commands that take a list, with strict = false). */
  protected positionals: string[] = []
  /** Warnings shown on stderr in human mode and returned in the JSON envelope. */
  protected readonly warnings: string[] = []
  /** What the envelope says the run acted on: the org and the profile of the settings; null where none applies. */
  protected acting: {org: string | null; profile: string | null} = {org: null, profile: null}
  /** What the run tells others (events, notifications); replaced by the run's own in init. */
  private reporter = new RunReporter('', REAL_CLOCK, () => {})
  /** The run's settings, clock, events, warn and signal, resolved once in init. */
  protected ctx!: RunContext
  /** What the run is built from: the process's, unless a test hands the command its own before it runs. */
  factory: Factory = processFactory()
  /** Aborted by the first interrupt of a guarded withApi: the context's signal. */
  private readonly interrupted = new AbortController()

  public abstract run(): Promise<CommandResult<Id>>

  public async init(): Promise<void> {
    await super.init()
    const {args, argv, flags} = await this.parse({
      args: this.ctor.args,
      baseFlags: (this.ctor as typeof BaseCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      flags: this.ctor.flags,
      strict: this.ctor.strict,
    })
    this.flags = flags as BaseFlags<T>
    this.args = args as BaseArgs<T>
    this.positionals = argv as string[]
    const warn = (message: string) => this.addWarning(message)
    const {clock, env} = this.factory
    this.reporter = new RunReporter(this.commandName(), clock, warn)
    const settings = new SettingsResolver({env, profileFlag: this.flags.profile})
    this.ctx = {
      clock,
      events: this.reporter.events,
      historyBudget: newHistoryBudget(),
      localState: once(() => new LocalState(settings.dir)),
      org: (client) => (this.actingOrg ??= this.resolveOrg(client)),
      reconcileWindowMs: once(() => settings.get('reconcile-window')),
      settings,
      sshConnectMs: once(() => settings.get('ssh-connect-timeout')),
      signal: this.interrupted.signal,
      warn,
    }
    this.reporter.follow(flags as {events?: 'ndjson'; 'events-file'?: string}, this.verbose())
  }

  /** What the run does, for whoever follows it (--events, --events-file, and the command's own display). */
  protected get events(): RunEvents {
    return this.reporter.events
  }

  /** Whether stderr carries only event lines (--events ndjson): no progress, no prompt, warnings as events. */
  protected eventsOnStderr(): boolean {
    return this.reporter.eventsOnStderr()
  }

  /** The run's last event: how it ended. */
  public async finally(error: Error | undefined): Promise<void> {
    if (error instanceof Errors.ExitError) return super.finally(error)
    this.reporter.finish(error ? this.runError(error) : undefined)
    return super.finally(error)
  }

  /**
   * The skeleton of every command that works on the API: guard interrupts (when the command says what a forced exit
   * leaves behind: the first Ctrl-C then aborts `signal` and lets the work wind down, a second exits at once with
   * those lines), connect (with the key, unless the work reads only the public inventory), do the work, and always
   * close the client and the guard.
   */
  protected withApi<R>(work: (client: TargonClient, signal: AbortSignal) => Promise<R>, onForcedExit: () => string[]): Promise<R>
  protected withApi<R>(work: (client: TargonClient) => Promise<R>, options?: {auth: false}): Promise<R>
  protected async withApi<R>(
    work: (client: TargonClient, signal: AbortSignal) => Promise<R>,
    onForcedExitOrOptions?: (() => string[]) | {auth: false},
  ): Promise<R> {
    const onForcedExit = typeof onForcedExitOrOptions === 'function' ? onForcedExitOrOptions : undefined
    const say = this.eventsOnStderr()
      ? (line: string) => this.events.emit({detail: line.trim(), status: 'warning', type: 'warning'})
      : undefined
    const guard = onForcedExit ? guardInterrupts(onForcedExit, say) : undefined
    guard?.signal.addEventListener('abort', () => this.interrupted.abort(guard.signal.reason), {once: true})
    try {
      // Only {auth: false} connects without the key.
      const client = await this.connect({auth: typeof onForcedExitOrOptions !== 'object', signal: guard?.signal})
      try {
        // Without a guard the work takes no signal (the overload without one).
        return await work(client, guard?.signal as AbortSignal)
      } finally {
        await client.close()
      }
    } finally {
      guard?.dispose()
    }
  }

  /** A client of the API for the run's settings, from the factory. */
  private connect(options: {auth: boolean; signal?: AbortSignal}): Promise<TargonClient> {
    return this.factory.connect(this.ctx.settings, {...options, clock: this.ctx.clock, trace: this.traceSink()})
  }

  /** The org the run acts on, once resolved (see RunContext.org). */
  private actingOrg: Promise<string> | undefined

  /** The org and the profile it came with: both go into the JSON envelope, and in text mode into a line on stderr. */
  private async resolveOrg(client: TargonClient): Promise<string> {
    const org = await resolveOrg(client, this.ctx.settings, this.flags.org)
    const profile = (await this.ctx.settings.profile()).name
    this.acting = {org, profile}
    this.events.emit({detail: `org: ${org} (profile: ${profile})`, status: 'progress', type: 'run'})
    this.info(`org: ${org} (profile: ${profile})`)
    return org
  }

  /** Progress and diagnostics: stderr, and silent under --json unless --verbose. Never a control character. */
  protected info(message: string): void {
    if (this.eventsOnStderr()) return
    if (!this.jsonEnabled() || this.verbose()) process.stderr.write(`${printable(message)}\n`)
  }

  /** See RunReporter.useNotifyUrl. */
  protected useNotifyUrl(flag: string | undefined, refuseFlag: boolean): Promise<void> {
    return this.reporter.useNotifyUrl(this.ctx.settings, flag, refuseFlag)
  }

  /** Whether this run sends notifications (a notify URL is set and was accepted): work only they need can be skipped. */
  protected notifying(): boolean {
    return this.reporter.notifying()
  }

  /** Sends one notification of this run when a notify URL is set; a failed delivery becomes a warning, nothing more. */
  protected notify(event: NotifyEvent, text: string, facts: NotifyFacts): Promise<boolean> {
    return this.reporter.notify(event, text, facts, this.acting)
  }

  /** Tells of a job whose outputs could not be fetched (down --jobs-done, a sweep): on stderr and as a notification. */
  protected notifyFetchFailing(notice: FetchFailingNotice): Promise<boolean> {
    this.info(notice.text)
    return this.notify('fetch-failing', notice.text, {exitCode: 0, vms: [notice.vm]})
  }

  /** The human result on stdout, without control characters from the API or a VM (--json goes out exactly, elsewhere). */
  public log(message = '', ...args: unknown[]): void {
    super.log(printable(message), ...args)
  }

  protected addWarning(message: string): void {
    this.warnings.push(message)
    this.events.emit({detail: message, status: 'warning', type: 'warning'})
    this.info(`Warning: ${message}`)
  }

  protected verbose(): boolean {
    return Boolean(this.flags?.verbose)
  }

  /** A line sink for HTTP traces when --verbose is on. */
  protected traceSink(): ((line: string) => void) | undefined {
    return this.verbose() ? (line) => process.stderr.write(`[http] ${printable(line)}\n`) : undefined
  }

  /** What the run failed with, in the CLI's taxonomy, with what only the run's settings can add to its hint. */
  private runError(error: unknown): TargonError {
    const err = failureOf(error)
    const sudoUser = err.cause instanceof OwnedByAnother ? this.ctx?.settings.sudoUser(err.cause.ownerUid) : undefined
    return sudoUser === undefined ? err : err.with({hint: sudoHint(sudoUser)})
  }

  /** "config set", not oclif's internal "config:set". */
  private commandName(): string {
    return (this.id ?? '').replaceAll(':', ' ')
  }

  protected toSuccessJson(result: unknown): unknown {
    return {
      command: this.commandName(),
      data: result,
      ok: true,
      org: this.acting.org,
      profile: this.acting.profile,
      schema_version: schemaVersion(this.commandName()),
      warnings: this.warnings,
    }
  }

  protected toErrorJson(error: unknown): ErrorEnvelope {
    const err = toTargonError(error)
    const envelope: ErrorEnvelope = {
      command: this.commandName(),
      error: {
        code: err.code,
        details: err.details ? withoutUndefined(err.details) : {},
        exit_code: err.exitCode,
        hint: err.hint ?? null,
        http_status: err.httpStatus ?? null,
        message: err.message,
        reason: err.reason ?? null,
        request_id: err.requestId ?? null,
        resource: err.resource ?? null,
        who_must_act: err.whoMustAct,
      },
      warnings: this.warnings,
      ok: false,
      org: this.acting.org,
      profile: this.acting.profile,
      schema_version: ERROR_SCHEMA_VERSION,
    }
    if (err.data) envelope.data = err.data
    return envelope
  }

  public async catch(error: Error & {oclif?: {exit?: number}}): Promise<void> {
    if (error instanceof Errors.ExitError) throw error
    const err = this.runError(error)
    process.exitCode = err.exitCode
    if (this.jsonEnabled()) {
      this.logJson(this.toErrorJson(err))
      return
    }

    // The run's last event carries the error.
    if (this.eventsOnStderr()) return
    const hint = err.hint ? `. Hint: ${err.hint}` : ''
    const requestId = err.requestId ? ` (request id ${err.requestId})` : ''
    process.stderr.write(`${printable(`Error: ${err.message}${requestId}${hint}`)}\n`)
    // Only a bug shows its stack, and only when asked: for the report.
    if (this.verbose() && err.whoMustAct === 'bug' && error.stack) process.stderr.write(`${error.stack}\n`)
  }
}

/** What a run that failed with `error` reports: in the CLI's taxonomy, and a bug told as one, with the version. */
export function failureOf(error: unknown, version = VERSION): TargonError {
  const err = toTargonError(error)
  return err.whoMustAct === 'bug' ? bugReport(err, version, BUGS_URL) : err
}

/** Maps anything thrown to the CLI's taxonomy: parse errors are usage errors, the rest a bug. */
export function toTargonError(error: unknown): TargonError {
  if (isTargonError(error)) {
    error.message = oneLine(error.message)
    return error
  }

  if (error instanceof Errors.CLIError) {
    return new TargonError('USAGE', withoutValues(oneLine(error.message)), {hint: 'see --help for the flags and examples'})
  }

  return toTargonError(asTargonError(error))
}

/**
 * oclif's parse messages quote what was typed (`Nonexistent flag: --notify=https://hooks…/TOKEN`), and a flag's value
 * may be a secret (a webhook URL, or a typo's value): they name the flag, never its value, and show no address.
 */
function withoutValues(message: string): string {
  return message.replaceAll(/(--[\w-]+)=\S*/g, '$1=…').replaceAll(/\b[a-z][a-z\d+.-]*:\/\/\S*/gi, '<an address>')
}

/** Collapses oclif's multi-line parse messages into one line. */
function oneLine(message: string): string {
  const parsing = /^Parsing (--[\w-]+)\s*\n\t/.exec(message)
  let text = message
  if (parsing) {
    const rest = message.slice(parsing[0].length)
    text = rest.startsWith(parsing[1] as string) ? rest : `${parsing[1]}: ${rest}`
  }

  // A line that ends with a colon introduces the next one ("Missing 1 required arg:" then the argument).
  return text
    .split('\n')
    .map((line) => line.trim().replace(/\s{2,}/g, ' '))
    .filter((line) => line !== '' && !line.startsWith('See more help with'))
    .join('; ')
    .replaceAll(':; ', ': ')
}

/** `make`'s value, made on the first call and then kept. */
function once<T>(make: () => T): () => T {
  let made: {value: T} | undefined
  return () => (made ??= {value: make()}).value
}

function withoutUndefined(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined))
}
