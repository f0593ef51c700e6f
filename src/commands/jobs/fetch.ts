import {BaseCommand} from '../../lib/cli/base-command.js'
import {JOB_ID_ARG, JOB_SELECTION_FLAGS, jobSelection} from '../../lib/cli/job-command.js'
import {TargonError, isTargonError} from '../../lib/core/errors.js'
import {fetchStored, storedJob} from '../../lib/workflows/run/jobs-done.js'
import type {JobsOptions} from '../../lib/workflows/run/jobs.js'
import type {TargonClient} from '../../lib/adapters/targon/client.js'
import {prose} from '../../lib/core/output.js'
import {checkJobId} from '../../lib/workflows/run/job.js'
import {jobOf, withJob} from '../../lib/workflows/run/jobs.js'
import {fetchOutputs, outputsDir} from '../../lib/workflows/run/fetch.js'
import type {JobFetchResult} from '../../lib/workflows/run/schema.js'
import {LocalState} from '../../lib/adapters/state/local-state.js'

export default class JobsFetch extends BaseCommand<typeof JobsFetch, 'jobs fetch'> {
  static summary = "Copy a job's --out paths into ./targon-out/<job id>/, nothing else."

  static description = prose(`Copies what the run's --out named, relative to the job's directory on the VM, as run does at
the end of a job; while the job runs, what is there now (with a warning). Once its VM is gone (deleted by down
--jobs-done or a sweep after the job), from the config directory's job store, where they were fetched first. Exit 12 (COPY_FAILED) when a path was not
copied; 4 for an id no VM of the selection has.`)

  static examples = [
    {command: '<%= config.bin %> jobs fetch j-20261202-030527-a1b2c3', description: 'The outputs again, or after a failed fetch'},
  ]

  static args = JOB_ID_ARG

  static flags = {...JOB_SELECTION_FLAGS}

  /** Whether a VM of the selection still has the job (then its outputs come from there, the newest). */
  private async onSomeVm(client: TargonClient, selection: JobsOptions, id: string, signal: AbortSignal): Promise<boolean> {
    try {
      return await withJob(client, new LocalState(selection.configDir), id, {...selection, signal}, async () => true)
    } catch (error) {
      if (isTargonError(error) && error.code === 'NOT_FOUND') return false
      throw error
    }
  }

  public async run(): Promise<JobFetchResult> {
    const id = checkJobId(this.args.id)
    return this.withApi(
      async (client, signal) => {
        const org = await this.resolveOrg(client)
        const selection = await jobSelection(this.flags, org, this.ctx, (message) => this.info(message))
        const stored = await storedJob(selection.configDir, id)
        // Its VM was deleted once the job had ended (down --jobs-done, a sweep): its outputs are in the job store.
        if (stored && !(await this.onSomeVm(client, selection, id, signal))) {
          const fetch = await fetchStored(stored.dir, outputsDir(id))
          if (!this.jsonEnabled()) for (const path of fetch.copied) this.log(`${fetch.destination ?? ''}${path}`)
          return {fetch, job: stored.job, vm: stored.vm}
        }

        return withJob(client, new LocalState(selection.configDir), id, {...selection, signal}, async ({listed, record, session, vm}) => {
          if (listed.state === 'running') this.addWarning(`job ${id} still runs: its outputs may not be complete yet`)
          if (record.out.length === 0) this.addWarning(`job ${id} was started without --out: nothing to fetch`)
          const fetch = await fetchOutputs(session, record, signal)
          const result: JobFetchResult = {fetch, job: jobOf(listed, this.ctx.clock.now()), vm: {name: vm.name, uid: vm.uid}}
          const failed = fetch.failed[0]
          if (failed)
            throw new TargonError('COPY_FAILED', `--out ${failed.path} was not fetched: ${failed.error}`, {
              data: result,
              hint: `the outputs stay on the VM in ${record.workdir}`,
            })
          if (!this.jsonEnabled()) for (const path of fetch.copied) this.log(`${fetch.destination ?? ''}${path}`)
          return result
        })
      },
      () => ['Exiting at once; files under their final names are whole.'],
    )
  }
}
