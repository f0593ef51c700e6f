/**
 * The progress of `targon up` with listr2 on stderr: one line per VM, per phase and, for the bootstrap phases, per
 * remote step (skipped or done, with its duration). A live tree on a terminal, plain lines without one (cron, CI,
 * TERM=dumb, a terminal without a width).
 *
 * It only listens: the run's events settle the tasks it shows, laid out from the run's pipeline; it decides nothing
 * about what runs or when. listr2's own SIGINT handler exits without clean-up, so it is disabled; interrupt.ts
 * handles signals.
 */
import type {ListrTask} from 'listr2'

import type {PhaseName, RunEvent} from '../adapters/events/schema.js'
import type {PipelineLayout} from '../workflows/up/pipeline.js'
import type {ProgressDisplay} from '../workflows/up/up.js'
import {Deferred} from '../core/deferred.js'
import {liveTerminal, printable} from '../core/output.js'

/** The wrapper listr2 hands a running task: its title, output, skip, and sub-lists. */
type TaskWrapper = Parameters<Extract<ListrTask['task'], (...args: never[]) => unknown>>[1]

interface StepShown {
  skipped: boolean
  detail: string
  durationMs: number
}

/** What the display knows of one VM, from its events. */
class VmView {
  name: string | null = null
  failedWith: string | null = null
  wrapper: TaskWrapper | undefined
  private ended = false
  private readonly phases = new Map<PhaseName, Deferred<'done' | 'skipped'>>()
  private readonly steps = new Map<string, Deferred<StepShown>>()
  private readonly outputs = new Map<PhaseName, TaskWrapper>()
  /** Phases that ended: a step asked for afterwards is settled at once. */
  private readonly closed = new Map<PhaseName, 'ended' | 'failed'>()

  /** `named`: each line of a phase or step names its VM (plain lines of several VMs, which interleave). */
  constructor(
    private readonly index: number,
    private readonly named: boolean,
  ) {}

  get title(): string {
    const name = this.name ?? `VM ${this.index}`
    return printable(this.failedWith ? `${name}: failed (${this.failedWith})` : name)
  }

  /** A phase's or step's line, with its VM's name in front where lines of several VMs interleave. */
  label(text: string): string {
    return this.named ? `${printable(this.name ?? `VM ${this.index}`)}: ${text}` : text
  }

  phase(name: PhaseName): Deferred<'done' | 'skipped'> {
    let outcome = this.phases.get(name)
    if (!outcome) this.phases.set(name, (outcome = new Deferred()))
    if (this.ended) outcome.reject(new Error('not run'))
    return outcome
  }

  step(phase: PhaseName, id: string): Deferred<StepShown> {
    const key = `${phase}/${id}`
    let outcome = this.steps.get(key)
    if (!outcome) this.steps.set(key, (outcome = new Deferred()))
    const closed = this.closed.get(phase)
    if (closed === 'failed' || this.ended) outcome.reject(new Error('failed'))
    if (closed === 'ended') outcome.resolve({detail: 'already done', durationMs: 0, skipped: true})
    return outcome
  }

  /** The last progress line of each phase, for a phase whose task listr2 starts after the line came. */
  private readonly lastOutput = new Map<PhaseName, string>()

  showOutput(phase: PhaseName, wrapper: TaskWrapper): void {
    this.outputs.set(phase, wrapper)
    const last = this.lastOutput.get(phase)
    if (last !== undefined) wrapper.output = last
  }

  apply(event: RunEvent): void {
    if (event.vm?.name) this.name = event.vm.name
    const {phase} = event
    if (!phase) return
    if (event.type === 'progress' && event.detail) {
      // Shown at once, also when it comes before listr2 runs the phase's task (up --wait says it waits right away).
      const line = this.label(printable(event.detail))
      this.lastOutput.set(phase, line)
      const wrapper = this.outputs.get(phase)
      if (wrapper) wrapper.output = line
    }

    if (event.type === 'step' && event.step && event.status !== 'started') {
      const outcome = this.step(phase, event.step)
      if (event.status === 'failed') outcome.reject(new Error(`${event.step} failed`))
      else outcome.resolve({detail: event.detail ?? '', durationMs: event.duration_ms ?? 0, skipped: event.status === 'skipped'})
    }

    if (event.type !== 'phase') return
    const outcome = this.phase(phase)
    if (event.status === 'done' || event.status === 'skipped') outcome.resolve(event.status)
    if (event.status === 'failed') {
      this.failedWith = event.error?.code ?? 'failed'
      outcome.reject(new Error(event.error?.message ?? 'failed'))
    }

    // Steps a phase never reported were not needed (e.g. the marker fast path); on failure they fail.
    if (event.status !== 'started') this.closeSteps(phase, event.status === 'failed')
    if (this.wrapper) this.wrapper.title = this.title
  }

  private closeSteps(phase: PhaseName, failed: boolean): void {
    this.closed.set(phase, failed ? 'failed' : 'ended')
    for (const [key] of this.steps) if (key.startsWith(`${phase}/`)) this.step(phase, key.slice(phase.length + 1))
  }

  /** The run is over: whatever never came (a VM that never reached a phase) ends as not run. */
  end(): void {
    this.ended = true
    for (const outcome of [...this.phases.values(), ...this.steps.values()]) outcome.reject(new Error('not run'))
  }

  /** A step's outcome, known in advance for the steps of a phase that already ended. */
  stepOutcome(phase: PhaseName, id: string): Promise<StepShown> {
    return this.step(phase, id).promise
  }
}

/** The listr2 display of a run laid out by `layout`, fed by the run's events. */
export async function phaseProgress(layout: PipelineLayout): Promise<ProgressDisplay> {
  // Loaded here: only `up` shows progress, and listr2 (with its terminal helpers) is not small.
  const {Listr, ListrLogger, ProcessOutput} = await import('listr2')
  const logger = new ListrLogger({processOutput: new ProcessOutput(process.stderr, process.stderr)})
  const views = Array.from({length: layout.count}, (_, index) => new VmView(index + 1, layout.count > 1 && !liveTerminal()))
  const list = new Listr(
    views.map((view) => vmTask(view, layout)),
    {
      concurrent: layout.concurrency,
      exitOnError: false,
      fallbackRenderer: 'simple',
      fallbackRendererCondition: !liveTerminal(),
      fallbackRendererOptions: {logger},
      registerSignalListeners: false,
      renderer: 'default',
      rendererOptions: {logger},
    },
  )
  const rendering = list.run().catch(() => undefined)
  return {
    finish: async () => {
      for (const view of views) view.end()
      await rendering
    },
    listener: (event) => {
      const index = event.vm?.index
      if (index) views[index - 1]?.apply(event)
    },
  }
}

/** One VM: its phases in order, stopping at the first that fails. */
function vmTask(view: VmView, layout: PipelineLayout): ListrTask {
  return {
    task: (_context, wrapper) => {
      view.wrapper = wrapper
      wrapper.title = view.title
      // The group of phases that run alongside each other does not stop at a failure (both sides settle), so it
      // cannot fail the VM's task: a last, untitled task does, and a failed VM never shows a tick.
      const failedVm: ListrTask = {
        task: () => {
          if (view.failedWith) throw new Error(view.title)
        },
      }
      return wrapper.newListr([...phaseTasks(view, layout), failedVm], {concurrent: false, exitOnError: true})
    },
    title: view.title,
  }
}

/** The phases as tasks; the phase that runs alongside the ones after it shares one concurrent group with them. */
function phaseTasks(view: VmView, layout: PipelineLayout): ListrTask[] {
  const {phases} = layout
  const task = (phase: PipelineLayout['phases'][number]): ListrTask => ({
    task: (_context: unknown, wrapper: TaskWrapper) => showPhase(view, phase, wrapper),
    title: view.label(phase.name),
  })
  const at = phases.findIndex((phase) => phase.name === layout.alongside)
  const side = phases[at]
  const after = phases.slice(at + 1)
  if (!side || after.length === 0) return phases.map(task)
  const chain = after.map((phase) => phase.name).join(', then ')
  return [
    ...phases.slice(0, at).map(task),
    {
      task: (_context: unknown, wrapper: TaskWrapper) =>
        wrapper.newListr(
          [
            task(side),
            {
              task: (_chainContext: unknown, chainWrapper: TaskWrapper) =>
                chainWrapper.newListr(after.map(task), {concurrent: false, exitOnError: true}),
              title: view.label(chain),
            },
          ],
          {concurrent: true, exitOnError: false},
        ),
      title: view.label(`${side.name} alongside ${chain}`),
    },
  ]
}

/** Shows one phase until its events end it; a phase with remote steps shows them as its sub-tasks. */
async function showPhase(view: VmView, phase: PipelineLayout['phases'][number], wrapper: TaskWrapper): Promise<unknown> {
  // The VM's name is known once its phases run (the title was laid out before).
  wrapper.title = view.label(phase.name)
  view.showOutput(phase.name, wrapper)
  const outcome = view.phase(phase.name).promise
  const {substeps} = phase
  if (!substeps) {
    if ((await outcome) === 'skipped') wrapper.skip(view.label(`${phase.name}: already done`))
    return undefined
  }

  return wrapper.newListr(
    substeps.map((substep, index) => ({
      task: async (_context: unknown, substepWrapper: TaskWrapper) => {
        let shown: StepShown
        try {
          shown = await view.stepOutcome(phase.name, substep.name)
        } catch (error) {
          // Let the phase end first, so that its real error is shown rather than the step's.
          await outcome
          throw error
        }

        if (shown.skipped) substepWrapper.skip(view.label(`${substep.title}: ${shown.detail.replaceAll('-', ' ') || 'skipped'}`))
        else
          substepWrapper.title = view.label(
            `${substep.title} (${(shown.durationMs / 1000).toFixed(1)} s)${shown.detail ? `: ${printable(shown.detail)}` : ''}`,
          )
        // After the last step, a phase that was already done is marked skipped.
        if (index === substeps.length - 1 && (await outcome) === 'skipped') wrapper.skip(view.label(`${phase.name}: already done`))
      },
      title: view.label(substep.title),
    })),
    {concurrent: false, exitOnError: true},
  )
}
