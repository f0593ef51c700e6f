/**
 * How each phase of each VM went, as `up --json` reports it, recorded from the run's events: when the phase started
 * (relative to the run, since phases overlap), how long it took, and the remote steps of the bootstrap phases.
 */
import type {Substep} from '../../adapters/bootstrap/steps.js'
import type {PhaseName, RunEvent} from '../../adapters/events/schema.js'
import type {PhaseResult, StepResult} from './schema.js'
import type {EventListener} from '../../adapters/events/run-events.js'
import type {PipelineLayout} from './pipeline.js'
import type {VmTrack} from './stages.js'

/** Fills each track's `phases` as its phases end. */
export function phaseRecorder(tracks: VmTrack[], runStartedAt: number, layout: PipelineLayout): EventListener {
  const substeps = new Map<PhaseName, Substep[]>(layout.phases.map((phase) => [phase.name, phase.substeps ?? []]))
  const open = new Map<string, {startedAt: number | undefined; steps: Map<string, StepResult>}>()
  const key = (event: RunEvent) => `${event.vm?.index}/${event.phase}`
  const entry = (event: RunEvent) => {
    let found = open.get(key(event))
    if (!found) open.set(key(event), (found = {startedAt: undefined, steps: new Map()}))
    return found
  }

  return (event) => {
    const track = event.vm?.index ? tracks[event.vm.index - 1] : undefined
    const {phase} = event
    if (!track || !phase) return
    if (event.type === 'step' && event.step && event.status !== 'started') {
      entry(event).steps.set(event.step, {
        detail: event.detail ?? '',
        duration_ms: event.duration_ms ?? 0,
        id: event.step,
        status: event.status === 'failed' ? 'failed' : event.status === 'skipped' ? 'skipped' : 'done',
        title: substeps.get(phase)?.find((substep) => substep.name === event.step)?.title ?? event.step,
      })
      return
    }

    if (event.type !== 'phase') return
    const at = Date.parse(event.time)
    if (event.status === 'started') {
      entry(event).startedAt = at
      return
    }

    if (event.status !== 'done' && event.status !== 'skipped' && event.status !== 'failed') return
    const {startedAt, steps} = entry(event)
    open.delete(key(event))
    const duration = event.duration_ms ?? 0
    const start = startedAt ?? at - duration
    // In the order the phase announces its steps, which is the order they run in.
    const order = (step: StepResult) => substeps.get(phase)?.findIndex((substep) => substep.name === step.id) ?? 0
    track.phases.push({
      duration_ms: duration,
      name: phase,
      started_ms: start - runStartedAt,
      status: event.status,
      steps: [...steps.values()].sort((a, b) => order(a) - order(b)),
    } satisfies PhaseResult)
  }
}
