/**
 * What the `targon jobs` commands share: the flags that say which VMs are searched (those of every command over
 * many VMs, fleet-command.ts), and the way from the selection to a JobsOptions value and a job found by its id.
 */
import {Args} from '@oclif/core'

import {type OverVms, SELECTION_FLAGS} from './fleet-command.js'
import {formatDuration} from '../core/input.js'
import type {JobsOptions} from '../workflows/job/jobs.js'
import type {Job} from '../workflows/job/schema.js'
import type {RunContext} from '../workflows/run-context.js'

export const JOB_SELECTION_FLAGS = {
  fleet: SELECTION_FLAGS.fleet({
    summary: 'The fleet whose running VMs are searched, and of VMs named by label (default: config, else "default").',
  }),
  vms: SELECTION_FLAGS.vms({summary: 'Comma-separated VM names, uids or --name labels to search instead of the whole fleet.'}),
}

export const JOB_ID_ARG = {
  id: Args.string({description: 'The job id (targon jobs lists them), e.g. j-20261202-030527-a1b2c3', required: true}),
}

/** The search of a jobs command: the selected VMs, with the run's clock, warnings and history reads. */
export function jobSearch(
  over: Pick<OverVms, 'configDir' | 'connectMs' | 'vms'>,
  run: Pick<RunContext, 'clock' | 'historyBudget' | 'warn'>,
  info: (message: string) => void,
): JobsOptions {
  return {
    ...over.vms,
    clock: run.clock,
    configDir: over.configDir,
    connectMs: over.connectMs,
    historyBudget: run.historyBudget,
    info,
    warn: run.warn,
  }
}

/** "running", "succeeded", "failed (3)", "cancelled", "lost". */
export function stateInWords(job: Pick<Job, 'exit_code' | 'state'>): string {
  return job.state === 'failed' ? `failed (${job.exit_code})` : job.state
}

export function durationInWords(ms: number | null): string {
  return ms === null ? '-' : formatDuration(ms)
}
