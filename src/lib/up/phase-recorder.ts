/**
 * How one phase of one VM went, as `up --json` reports it: when it started (relative to the run, since phases may
 * overlap), how long it took, and the remote steps of the bootstrap phases with their durations.
 */
import type {StepEvent, Substep} from '../bootstrap/runner.js'
import type {PhaseName, PhaseResult, StepResult} from '../contract.js'

const STEP_STATUS = {fail: 'failed', ok: 'done', skip: 'skipped'} as const

export class PhaseRecorder {
  private started = Date.now()
  private readonly stepStarts = new Map<string, number>()
  private readonly steps = new Map<string, StepResult>()

  constructor(
    private readonly name: PhaseName,
    private readonly runStartedAt: number,
    private readonly substeps: Substep[] = [],
  ) {}

  /** The phase really starts now: install, once it has an address to try SSH on. */
  restart(): void {
    this.started = Date.now()
  }

  /** Records the phase's step events on their way to `next` (the progress display). */
  relay(next: (event: StepEvent) => void): (event: StepEvent) => void {
    return (event) => {
      this.onEvent(event)
      next(event)
    }
  }

  private onEvent(event: StepEvent): void {
    if (event.event === 'start') {
      this.stepStarts.set(event.id, event.at)
      return
    }

    this.steps.set(event.id, {
      detail: event.detail,
      duration_ms: event.at - (this.stepStarts.get(event.id) ?? event.at),
      id: event.id,
      status: STEP_STATUS[event.event],
      title: this.substeps.find((substep) => substep.id === event.id)?.title ?? event.id,
    })
  }

  result(status: PhaseResult['status']): PhaseResult {
    // In the order the phase announces its steps, which is the order they run in.
    const order = (step: StepResult) => this.substeps.findIndex((substep) => substep.id === step.id)
    return {
      duration_ms: Date.now() - this.started,
      name: this.name,
      started_ms: this.started - this.runStartedAt,
      status,
      steps: [...this.steps.values()].sort((a, b) => order(a) - order(b)),
    }
  }
}
