/**
 * What the `targon jobs` commands share: the flags that say which VMs are searched, and the way from those flags
 * to a JobsOptions value and a job found by its id.
 */
import {Args, Flags} from '@oclif/core'

import {formatDuration} from '../core/input.js'
import {parseVmList} from '../fleet/fan-out.js'
import {ownerScope} from '../fleet/owners.js'
import {REAL_CLOCK} from '../core/clock.js'
import type {JobsOptions} from '../run/jobs.js'
import type {Job} from '../run/schema.js'
import {configDir, resolveSetting} from '../settings/settings.js'

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
  say: {warn: (message: string) => void; info: (message: string) => void},
): Promise<JobsOptions> {
  return {
    configDir: configDir(),
    fleet: await resolveSetting('fleet', flags.fleet),
    info: say.info,
    now: () => REAL_CLOCK.now(),
    org,
    owners: await ownerScope(false),
    targets: parseVmList(flags.vms),
    warn: say.warn,
  }
}

/** "running", "succeeded", "failed (3)", "cancelled", "lost". */
export function stateInWords(job: Pick<Job, 'exit_code' | 'state'>): string {
  return job.state === 'failed' ? `failed (${job.exit_code})` : job.state
}

export function durationInWords(ms: number | null): string {
  return ms === null ? '-' : formatDuration(ms)
}
