/**
 * The event stream of one run: workflows say what they do here, once, and whoever follows the run listens (the
 * progress display, the `up --json` phase record, --events). A workflow never knows who listens.
 */
import {randomBytes} from 'node:crypto'

import {EVENT_VERSION, type RunEvent} from '../contract.js'
import {asTargonError} from '../core/errors.js'
import {printable} from '../core/output.js'

/** What a workflow says; the stream adds the version, time, run id and command. */
export type EventInput = Pick<RunEvent, 'status' | 'type'> &
  Partial<Omit<RunEvent, 'command' | 'event_version' | 'run' | 'status' | 'time' | 'type'>>

export type EventListener = (event: RunEvent) => void

export type EventVm = NonNullable<RunEvent['vm']>

export class RunEvents {
  readonly run = randomBytes(6).toString('hex')
  private readonly listeners: EventListener[] = []

  constructor(readonly command: string) {}

  on(listener: EventListener): void {
    this.listeners.push(listener)
  }

  /** Whether anyone but the workflow itself listens (then the stream is worth building events for). */
  get followed(): boolean {
    return this.listeners.length > 0
  }

  emit(input: EventInput): void {
    const event: RunEvent = {
      command: this.command,
      detail: input.detail === undefined || input.detail === null ? null : printable(input.detail),
      duration_ms: input.duration_ms ?? null,
      error: input.error ?? null,
      event_version: EVENT_VERSION,
      phase: input.phase ?? null,
      run: this.run,
      status: input.status,
      step: input.step ?? null,
      time: new Date().toISOString(),
      type: input.type,
      vm: input.vm ?? null,
    }
    for (const listener of this.listeners) listener(event)
  }
}

/** The error fields of a failed event: its code, message and hint, never its data. */
export function eventError(error: unknown): NonNullable<RunEvent['error']> {
  const failure = asTargonError(error)
  return {code: failure.code, hint: failure.hint ?? null, message: printable(failure.message)}
}

/** A VM outside an up run, by uid and name. */
export function vmRef(uid: string, name: string | null): EventVm {
  return {index: null, name, uid}
}
