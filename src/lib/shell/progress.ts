/**
 * Phase progress with listr2 on stderr: one line per VM, per phase and, for the bootstrap
 * phases, per remote step (skipped or done, with its duration). A live tree on a terminal,
 * plain lines without one (cron, CI, TERM=dumb, a terminal without a width), nothing under
 * --json. listr2's own SIGINT handler exits without clean-up, so it is disabled; interrupt.ts
 * handles signals.
 */

import type {ListrTask} from 'listr2'

import type {StepEvent, Substep} from '../bootstrap/runner.js'
import {printable} from './output.js'

export interface PhaseStep<Vm> {
  title: string
  /**
   * Runs alongside the phases after it instead of before them: they start together, shown side by side, and the VM
   * is done once all have ended.
   */
  alongside?: boolean
  /** Remote steps reported while the phase runs, shown as sub-tasks. */
  substeps?: Substep[]
  /** `report` shows a line of progress under the phase (e.g. what it waits for). */
  run: (vm: Vm, onEvent: (event: StepEvent) => void, report: (line: string) => void) => Promise<'done' | 'skipped'>
}

export interface ProgressOptions<Vm> {
  silent: boolean
  concurrency: number
  /** The title of a VM's line, re-read after every phase (the name is known after register). */
  vmTitle: (vm: Vm) => string
  /** Records a VM's failure; the run goes on for the other VMs. */
  onFailure: (vm: Vm, error: unknown) => void
}

interface StepOutcome {
  event: 'ok' | 'skip'
  detail: string
  durationMs: number
}

/** Turns the stream of step events into one promise per announced sub-step. */
class SubstepTracker {
  private readonly waiting = new Map<
    string,
    {promise: Promise<StepOutcome>; resolve: (outcome: StepOutcome) => void; reject: (error: unknown) => void}
  >()
  private readonly started = new Map<string, number>()

  constructor(substeps: Substep[]) {
    for (const {id} of substeps) {
      let resolve!: (outcome: StepOutcome) => void
      let reject!: (error: unknown) => void
      const promise = new Promise<StepOutcome>((res, rej) => {
        resolve = res
        reject = rej
      })
      promise.catch(() => undefined)
      this.waiting.set(id, {promise, reject, resolve})
    }
  }

  wait(id: string): Promise<StepOutcome> {
    return this.waiting.get(id)?.promise ?? Promise.resolve({detail: '', durationMs: 0, event: 'skip'})
  }

  onEvent = (event: StepEvent): void => {
    if (event.event === 'start') {
      this.started.set(event.id, event.at)
      return
    }

    const durationMs = event.at - (this.started.get(event.id) ?? event.at)
    if (event.event === 'fail') this.waiting.get(event.id)?.reject(new Error(`${event.id} failed`))
    else this.waiting.get(event.id)?.resolve({detail: event.detail, durationMs, event: event.event})
  }

  /** Steps never reported were not needed (e.g. the marker fast path); on failure they fail. */
  close(error?: unknown): void {
    for (const pending of this.waiting.values()) {
      if (error) pending.reject(error)
      else pending.resolve({detail: 'already done', durationMs: 0, event: 'skip'})
    }
  }
}
/**
 * Whether stderr can show a live tree: a terminal that moves the cursor (not TERM=dumb) and has a width (a
 * pseudo-terminal without a size has 0 columns, where each character would get its own line). Otherwise, and
 * in CI, plain lines.
 */
export function liveTerminal(): boolean {
  return Boolean(process.stderr.isTTY) && !process.env.CI && process.env.TERM !== 'dumb' && (process.stderr.columns ?? 0) > 0
}

/** The wrapper listr2 hands a running task: its title, skip, and sub-lists. */
type TaskWrapper = Parameters<Extract<ListrTask['task'], (...args: never[]) => unknown>>[1]

/** Runs the phases of every VM (VMs in parallel, each VM's phases in order), with progress on stderr. */
export async function runPhases<Vm>(vms: Vm[], steps: PhaseStep<Vm>[], options: ProgressOptions<Vm>): Promise<void> {
  // Loaded here: only `up` shows progress, and listr2 (with its terminal helpers) is not small.
  const {Listr, ListrLogger, ProcessOutput} = await import('listr2')
  const logger = new ListrLogger({processOutput: new ProcessOutput(process.stderr, process.stderr)})
  const list = new Listr(
    vms.map((vm) => vmTask(vm, steps, options)),
    {
      concurrent: options.concurrency,
      exitOnError: false,
      fallbackRenderer: 'simple',
      fallbackRendererCondition: !liveTerminal(),
      fallbackRendererOptions: {logger},
      registerSignalListeners: false,
      renderer: 'default',
      rendererOptions: {logger},
      silentRendererCondition: options.silent,
    },
  )
  await list.run().catch(() => undefined)
}

/** One VM: its phases in order, stopping at the first that fails. */
function vmTask<Vm>(vm: Vm, steps: PhaseStep<Vm>[], options: ProgressOptions<Vm>): ListrTask {
  return {
    task: (_context, vmWrapper) => vmWrapper.newListr(phaseTasks(vm, steps, vmWrapper, options), {concurrent: false, exitOnError: true}),
    title: printable(options.vmTitle(vm)),
  }
}

/** The phases as tasks; a phase that runs alongside the ones after it shares one concurrent group with them. */
function phaseTasks<Vm>(vm: Vm, steps: PhaseStep<Vm>[], vmWrapper: TaskWrapper, options: ProgressOptions<Vm>): ListrTask[] {
  const task = (step: PhaseStep<Vm>): ListrTask => ({
    task: (_stepContext: unknown, stepWrapper: TaskWrapper) => runStep(vm, step, vmWrapper, stepWrapper, options),
    title: step.title,
  })
  const at = steps.findIndex((step) => step.alongside)
  const side = steps[at]
  const after = steps.slice(at + 1)
  if (!side || after.length === 0) return steps.map(task)
  const chain = after.map((step) => step.title).join(', then ')
  return [
    ...steps.slice(0, at).map(task),
    {
      // Both sides always run to their end (a failing side ends the other), so that the VM's outcome is settled.
      task: (_context: unknown, wrapper: TaskWrapper) =>
        wrapper.newListr(
          [
            task(side),
            {
              task: (_chainContext: unknown, chainWrapper: TaskWrapper) =>
                chainWrapper.newListr(after.map(task), {concurrent: false, exitOnError: true}),
              title: chain,
            },
          ],
          {concurrent: true, exitOnError: false},
        ),
      title: `${side.title} alongside ${chain}`,
    },
  ]
}

/** Runs one phase; a phase with remote steps shows them as its sub-tasks while it runs. */
async function runStep<Vm>(
  vm: Vm,
  step: PhaseStep<Vm>,
  vmWrapper: TaskWrapper,
  stepWrapper: TaskWrapper,
  options: ProgressOptions<Vm>,
): Promise<unknown> {
  const run = async (onEvent: (event: StepEvent) => void) => {
    try {
      return await step.run(vm, onEvent, (line) => (stepWrapper.output = printable(line)))
    } catch (error) {
      options.onFailure(vm, error)
      throw error
    } finally {
      // The name is known after register.
      vmWrapper.title = printable(options.vmTitle(vm))
    }
  }

  if (!step.substeps) {
    if ((await run(() => {})) === 'skipped') stepWrapper.skip(`${step.title}: already done`)
    return undefined
  }

  const tracker = new SubstepTracker(step.substeps)
  const running = run(tracker.onEvent).then(
    (outcome) => {
      tracker.close()
      return outcome
    },
    (error: unknown) => {
      tracker.close(error)
      throw error
    },
  )
  running.catch(() => undefined)
  return stepWrapper.newListr(
    step.substeps.map((substep, index) => ({
      task: (_context: unknown, substepWrapper: TaskWrapper) =>
        showSubstep(
          substep,
          tracker,
          running,
          substepWrapper,
          index === (step.substeps?.length ?? 0) - 1 ? {step, stepWrapper} : undefined,
        ),
      title: substep.title,
    })),
    {concurrent: false, exitOnError: true},
  )
}

/** Waits for one remote step and shows how it went; after the last one, a phase that was already done is marked skipped. */
async function showSubstep<Vm>(
  substep: Substep,
  tracker: SubstepTracker,
  running: Promise<'done' | 'skipped'>,
  wrapper: TaskWrapper,
  last: {step: PhaseStep<Vm>; stepWrapper: TaskWrapper} | undefined,
): Promise<void> {
  let outcome: StepOutcome
  try {
    outcome = await tracker.wait(substep.id)
  } catch (error) {
    // Let the phase finish first, so that its real error is recorded before listr moves on.
    await running.catch(() => undefined)
    throw error
  }

  if (outcome.event === 'skip') wrapper.skip(`${substep.title}: ${outcome.detail.replaceAll('-', ' ') || 'skipped'}`)
  else wrapper.title = `${substep.title} (${(outcome.durationMs / 1000).toFixed(1)} s)${outcome.detail ? `: ${outcome.detail}` : ''}`
  if (last && (await running) === 'skipped') last.stepWrapper.skip(`${last.step.title}: already done`)
}
