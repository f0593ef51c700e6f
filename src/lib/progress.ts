/**
 * Phase progress with listr2 on stderr: one line per VM and per phase. A live tree on a
 * terminal, plain lines without one (cron, CI), nothing under --json. listr2's own SIGINT
 * handler exits without clean-up, so it is disabled; interrupt.ts handles signals.
 */
import {Listr, ListrLogger, ProcessOutput} from 'listr2'

export interface PhaseStep<Vm> {
  title: string
  run: (vm: Vm) => Promise<'done' | 'skipped'>
}

export interface ProgressOptions<Vm> {
  silent: boolean
  concurrency: number
  /** The title of a VM's line, re-read after every phase (the name is known after register). */
  vmTitle: (vm: Vm) => string
  /** Records a VM's failure; the run goes on for the other VMs. */
  onFailure: (vm: Vm, error: unknown) => void
}

export async function runPhases<Vm>(vms: Vm[], steps: PhaseStep<Vm>[], options: ProgressOptions<Vm>): Promise<void> {
  const logger = new ListrLogger({processOutput: new ProcessOutput(process.stderr, process.stderr)})
  const list = new Listr(
    vms.map((vm) => ({
      task: async (_context: unknown, vmTask) =>
        vmTask.newListr(
          steps.map((step) => ({
            task: async (_stepContext: unknown, stepTask) => {
              let outcome: 'done' | 'skipped'
              try {
                outcome = await step.run(vm)
              } catch (error) {
                options.onFailure(vm, error)
                throw error
              } finally {
                vmTask.title = options.vmTitle(vm)
              }

              if (outcome === 'skipped') stepTask.skip(`${step.title}: already done`)
            },
            title: step.title,
          })),
          {concurrent: false, exitOnError: true},
        ),
      title: options.vmTitle(vm),
    })),
    {
      concurrent: options.concurrency,
      exitOnError: false,
      fallbackRenderer: 'simple',
      fallbackRendererCondition: !process.stderr.isTTY || Boolean(process.env.CI),
      fallbackRendererOptions: {logger},
      registerSignalListeners: false,
      renderer: 'default',
      rendererOptions: {logger},
      silentRendererCondition: options.silent,
    },
  )

  await list.run().catch(() => undefined)
}
