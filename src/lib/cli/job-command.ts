/**
 * What the `targon jobs` commands share: the flags that say which VMs are searched, and the way from those flags
 * to a JobsOptions value and a job found by its id.
 */
import {Args, Flags} from '@oclif/core'

import {formatDuration} from '../core/input.js'
import {parseVmList} from '../domain/fleet/fan-out.js'
import {ownerScope} from '../domain/fleet/owners.js'
import type {JobsOptions} from '../workflows/job/jobs.js'
import type {Job} from '../workflows/job/schema.js'
import type {RunContext} from '../workflows/run-context.js'

export const JOB_SELECTION_FLAGS = {
  fleet: Flags.string({summary: 'The fleet whose running VMs are searched, and of VMs named by label (default: config, else "default").'}),
  vms: Flags.string({summary: 'Comma-separated VM names, uids or --name labels to search instead of the whole fleet.'}),
}

export const JOB_ID_ARG = {
  id: Args.string({description: 'The job id (targon jobs lists them), e.g. j-20261202-030527-a1b2c3', required: true}),
}

/** The search of a jobs command, from its flags. */
export async function jobSelection(
  flags: {fleet?: string; vms?: string},
  org: string,
  run: Pick<RunContext, 'clock' | 'historyBudget' | 'settings' | 'warn'>,
  info: (message: string) => void,
): Promise<JobsOptions> {
  return {
    clock: run.clock,
    configDir: run.settings.dir,
    fleet: await run.settings.get('fleet', flags.fleet),
    historyBudget: run.historyBudget,
    info,
    org,
    owners: await ownerScope(run.settings, false),
    targets: parseVmList(flags.vms),
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
