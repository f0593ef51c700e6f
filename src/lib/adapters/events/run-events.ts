/**
 * The event stream of one run: workflows say what they do here, once, and whoever follows the run listens (the
 * progress display, the `up --json` phase record, --events). A workflow never knows who listens.
 */
import {randomBytes} from 'node:crypto'

import {EVENT_VERSION, type RunEvent} from './schema.js'
import {type Clock, REAL_CLOCK, isoNow} from '../../core/clock.js'
import {asTargonError} from '../../core/errors.js'
import {printable} from '../../core/output.js'

/** What a workflow says; the stream adds the version, time, run id and command. */
export type EventInput = Pick<RunEvent, 'status' | 'type'> &
  Partial<Omit<RunEvent, 'command' | 'event_version' | 'run' | 'status' | 'time' | 'type'>>

export type EventListener = (event: RunEvent) => void

export type EventVm = NonNullable<RunEvent['vm']>

export class RunEvents {
  readonly run = randomBytes(6).toString('hex')
  private readonly listeners: EventListener[] = []
  /** Events emitted by a listener while an event is dispatched: they follow it, so every listener sees one order. */
  private readonly queued: RunEvent[] = []
  private dispatching = false

  constructor(
    readonly command: string,
    /** The clock of each event's time. */
    private readonly clock: Pick<Clock, 'now'> = REAL_CLOCK,
  ) {}

  on(listener: EventListener): void {
    this.listeners.push(listener)
  }

  emit(input: EventInput): void {
    // Names and messages come from the API or a VM: never a control character (steps are names of the contract).
    const text = (value: null | string | undefined) => (value === undefined || value === null ? null : printable(value))
    const {error, vm} = input
    this.queued.push({
      command: this.command,
      detail: text(input.detail),
      duration_ms: input.duration_ms ?? null,
      error: error ? {code: error.code, hint: text(error.hint), message: printable(error.message)} : null,
      event_version: EVENT_VERSION,
      ended_jobs: input.ended_jobs ?? null,
      hook: input.hook ?? null,
      phase: input.phase ?? null,
      run: this.run,
      status: input.status,
      step: input.step ?? null,
      time: isoNow(this.clock),
      type: input.type,
      vm: vm ? {index: vm.index, name: text(vm.name), uid: text(vm.uid)} : null,
    })
    if (this.dispatching) return
    this.dispatching = true
    try {
      for (let event = this.queued.shift(); event; event = this.queued.shift()) for (const listener of this.listeners) listener(event)
    } finally {
      this.dispatching = false
    }
  }
}

/** The error fields of a failed event: its code, message and hint, never its data. */
export function eventError(error: unknown): NonNullable<RunEvent['error']> {
  const failure = asTargonError(error)
  return {code: failure.code, hint: failure.hint ?? null, message: failure.message}
}

/** A VM outside an up run, by uid and name. */
export function vmRef(uid: string, name: string | null): EventVm {
  return {index: null, name, uid}
}
