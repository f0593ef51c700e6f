/**
 * The CLI's error taxonomy. Every expected failure is a TargonError whose `code`
 * decides the exit code; anything else that escapes a command is a bug (INTERNAL).
 * This file is the only place where exit codes are defined.
 */
import {dirname} from 'node:path'

/**
 * Who must act on an error (cli-kit's AbortError against BugError): `user`, for a usage or config problem or a
 * refusal (price, capacity, credits, quota) that is the user's to decide about; `targon`, when the API or a VM
 * misbehaved (the Targon side must act, or the user retries later); `bug`, an error of this tool.
 */
export const WHO_MUST_ACT = ['user', 'targon', 'bug'] as const
export type WhoMustAct = (typeof WHO_MUST_ACT)[number]

/** Every error code: its exit code and who must act on it. */
export const ERROR_CODES = {
  INTERNAL: {exit: 1, whoMustAct: 'bug'},
  USAGE: {exit: 2, whoMustAct: 'user'},
  NAME_CONFLICT: {exit: 2, whoMustAct: 'user'},
  AUTH: {exit: 3, whoMustAct: 'user'},
  CONFIG: {exit: 3, whoMustAct: 'user'},
  NOT_FOUND: {exit: 4, whoMustAct: 'user'},
  API_ERROR: {exit: 5, whoMustAct: 'targon'},
  NETWORK_ERROR: {exit: 5, whoMustAct: 'targon'},
  BAD_RESPONSE: {exit: 5, whoMustAct: 'targon'},
  TIMEOUT: {exit: 6, whoMustAct: 'targon'},
  SSH_FAILED: {exit: 7, whoMustAct: 'targon'},
  HOST_KEY_MISMATCH: {exit: 7, whoMustAct: 'targon'},
  BOOTSTRAP_FAILED: {exit: 8, whoMustAct: 'targon'},
  PRICE_CAP_EXCEEDED: {exit: 9, whoMustAct: 'user'},
  NO_CAPACITY: {exit: 10, whoMustAct: 'user'},
  INSUFFICIENT_CREDITS: {exit: 10, whoMustAct: 'user'},
  /** Something still bills after a deletion, or part of a fleet failed: what failed was the API's or a VM's. */
  PARTIAL_FAILURE: {exit: 11, whoMustAct: 'targon'},
  /** targon exec: the command failed (or could not run) on at least one VM. */
  REMOTE_COMMAND_FAILED: {exit: 12, whoMustAct: 'user'},
  /** targon cp: some file was not copied on at least one VM. */
  COPY_FAILED: {exit: 12, whoMustAct: 'user'},
  /** Targon refused for a quota of the org (a 429 whose reason names a limit): final, no other offer is tried. */
  QUOTA_EXCEEDED: {exit: 13, whoMustAct: 'user'},
  /** targon credits --min-runway: the org's credits last less than that at the current burn rate. */
  RUNWAY_SHORT: {exit: 14, whoMustAct: 'user'},
  /** By SIGINT; each interrupting signal has its own code, see SIGNAL_EXIT_CODES. */
  INTERRUPTED: {exit: 130, whoMustAct: 'user'},
} as const satisfies Record<string, {exit: number; whoMustAct: WhoMustAct}>

export type ErrorCode = keyof typeof ERROR_CODES

/** The exit code of each error code. */
export const EXIT_CODES = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, {exit}]) => [code, exit])) as {
  readonly [C in ErrorCode]: (typeof ERROR_CODES)[C]['exit']
}

/** The signals that interrupt a run and clean up, and their exit codes: 128 + the signal number. */
export const SIGNAL_EXIT_CODES = {SIGHUP: 129, SIGINT: 130, SIGQUIT: 131, SIGTERM: 143} as const
export type InterruptSignal = keyof typeof SIGNAL_EXIT_CODES

/** Exit code for an unknown command (not-found.ts), as oclif's convention has it. */
export const UNKNOWN_COMMAND_EXIT = 127

export interface ErrorOptions {
  hint?: string
  httpStatus?: number
  reason?: string
  requestId?: string
  resource?: {uid?: string; name?: string}
  details?: Record<string, unknown>
  /** Partial results or the clean-up outcome that accompany the error in the JSON envelope. */
  data?: Record<string, unknown>
  cause?: unknown
  /** For INTERRUPTED: the signal, which decides the exit code. */
  signal?: InterruptSignal
}

export class TargonError extends Error {
  readonly code: ErrorCode
  readonly hint?: string
  readonly httpStatus?: number
  readonly reason?: string
  readonly requestId?: string
  resource?: {uid?: string; name?: string}
  readonly details?: Record<string, unknown>
  data?: Record<string, unknown>
  readonly signal?: InterruptSignal

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'TargonError'
    this.code = code
    this.hint = options.hint
    this.httpStatus = options.httpStatus
    this.reason = options.reason
    this.requestId = options.requestId
    this.resource = options.resource
    this.details = options.details
    this.data = options.data
    this.signal = options.signal
  }

  /** A copy with some fields changed (the message among them) and every other field kept: the one way to amend an error. */
  with(changes: ErrorOptions & {message?: string}): TargonError {
    const {message = this.message, ...options} = changes
    return new TargonError(this.code, message, {
      cause: this.cause,
      data: this.data,
      details: this.details,
      hint: this.hint,
      httpStatus: this.httpStatus,
      reason: this.reason,
      requestId: this.requestId,
      resource: this.resource,
      signal: this.signal,
      ...options,
    })
  }

  get exitCode(): number {
    return this.code === 'INTERRUPTED' && this.signal ? SIGNAL_EXIT_CODES[this.signal] : EXIT_CODES[this.code]
  }

  get whoMustAct(): WhoMustAct {
    return ERROR_CODES[this.code].whoMustAct
  }
}

export function usageError(message: string, hint?: string): TargonError {
  return new TargonError('USAGE', message, {hint})
}

/** Anything that is not a TargonError is a bug: INTERNAL, exit 1. */
/** What a local file system error code means, in words. */
export const FS_ERRORS: Record<string, string> = {
  EACCES: 'permission denied',
  EDQUOT: 'the disk quota is used up',
  EEXIST: 'already exists',
  EISDIR: 'is a directory',
  ELOOP: 'too many levels of symbolic links',
  ENOENT: 'no such file or directory',
  ENOSPC: 'no space left on the device',
  ENOTDIR: 'not a directory',
  ENOTEMPTY: 'a directory that is not empty is in the way',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
}

/** Errors of a full or read-only disk: this machine's to fix, never a bug. */
const DISK_FULL_OR_READ_ONLY = new Set(['EDQUOT', 'ENOSPC', 'EROFS'])

/**
 * A local file that could not be written, as a one-line CONFIG error (exit 3) that names it and who must act. `dir`:
 * the directory to name in the fix (the config directory, by default the file's).
 */
export function localWriteError(error: unknown, path: string, dir = dirname(path)): TargonError {
  const code = (error as NodeJS.ErrnoException).code ?? ''
  const why = FS_ERRORS[code] ?? (error as Error).message
  const hint = DISK_FULL_OR_READ_ONLY.has(code)
    ? `free space on the device of ${dir} (or make it writable), or point TARGON_CONFIG_DIR at a directory elsewhere`
    : `make ${dir} writable, or point TARGON_CONFIG_DIR at a directory elsewhere`
  return new TargonError('CONFIG', `cannot write ${path}: ${why}`, {cause: error, hint})
}

export function asTargonError(error: unknown): TargonError {
  if (error instanceof TargonError) return error
  // A write that a full or read-only disk refused, wherever it came from: a local problem to fix, not a bug.
  const errno = error as NodeJS.ErrnoException
  if (typeof errno?.path === 'string' && DISK_FULL_OR_READ_ONLY.has(errno.code ?? '')) return localWriteError(error, errno.path)
  const message = error instanceof Error ? error.message : String(error)
  return new TargonError('INTERNAL', `unexpected error: ${message}`, {hint: 'run again with --verbose and report it with the output'})
}

/**
 * A bug of this tool, told as one (cli-kit's BugError): its message says so, names the version and asks for a report,
 * at `reportAt` (the package's issue tracker) when there is one.
 */
export function bugReport(error: TargonError, version: string, reportAt?: string): TargonError {
  const where = reportAt ? ` at ${reportAt}` : ''
  return error.with({
    hint: 'run again with --verbose to add the stack trace to the report',
    message: `${error.message}: a bug of targon ${version}; please report it${where} with the command and this message`,
  })
}

export function isTargonError(error: unknown): error is TargonError {
  return error instanceof TargonError
}

/** Why a signal aborted (the interrupt or the time-out it was aborted with), as the error to throw. */
export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason
  return reason instanceof Error ? reason : new TargonError('INTERRUPTED', 'interrupted')
}

/** True when the error comes from an AbortSignal (Ctrl-C or a deadline). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
}
