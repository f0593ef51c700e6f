import {FleetCommand, type OverVms} from '../../lib/cli/fleet-command.js'
import {JOB_ID_ARG, JOB_SELECTION_FLAGS, jobSearch} from '../../lib/cli/job-command.js'
import {TargonError, isTargonError} from '../../lib/core/errors.js'
import {
  checkJobId,
  fetchOutputs,
  fetchStored,
  type JobFetchResult,
  jobOf,
  type JobsOptions,
  outputsDir,
  storedJob,
  storeLimit,
  withJob,
} from '../../lib/workflows/job/index.js'
import {CopyBudget} from '../../lib/workflows/copy/index.js'
import {printableName, prose} from '../../lib/core/output.js'

export default class JobsFetch extends FleetCommand<typeof JobsFetch, 'jobs fetch'> {
  static summary = "Copy a job's --out paths into ./targon-out/<job id>/, nothing else."

  static description = prose(`Copies what the run's --out named, relative to the job's directory on the VM, as run does at
the end of a job; while the job runs, what is there now (with a warning). Once its VM is gone (deleted by down
--jobs-done or a sweep after the job), from the config directory's job store, where they were fetched first. The
paths are those run named when it started the job from this config directory (else the VM's record of the job); a
VM that answers for another job is refused. At most job-store-limit bytes (default 10G) and 100,000 files come, and
never more than the local disk holds with 64M to spare: the fetch stops there, keeping what came. Exit 12
(COPY_FAILED) when a path was not copied, or the fetch stopped at its bound; 4 for an id no VM of the selection has.`)

  static examples = [
    {command: '<%= config.bin %> jobs fetch j-20261202-030527-a1b2c3', description: 'The outputs again, or after a failed fetch'},
  ]

  static args = JOB_ID_ARG

  static flags = {...JOB_SELECTION_FLAGS}

  /** Whether a VM of the selection still has the job (then its outputs come from there, the newest). */
  private async onSomeVm({client, state}: OverVms, selection: JobsOptions, id: string): Promise<boolean> {
    try {
      return await withJob(client, state, id, selection, async () => true)
    } catch (error) {
      if (isTargonError(error) && error.code === 'NOT_FOUND') return false
      throw error
    }
  }

  /** The fetch's result: each file copied on a line of its own, or COPY_FAILED for the first path that did not come. */
  private fetched(result: JobFetchResult, where: string): JobFetchResult {
    const {fetch} = result
    const failed = fetch.failed[0]
    if (failed)
      throw new TargonError('COPY_FAILED', `--out ${failed.path} of job ${result.job.id} was not fetched: ${printableName(failed.error)}`, {
        data: result,
        hint: `what came is in ${fetch.destination ?? outputsDir(result.job.id)}; ${where}`,
      })
    if (!this.jsonEnabled()) for (const path of fetch.copied) this.log(`${fetch.destination ?? ''}${printableName(path)}`)
    return result
  }

  public async run(): Promise<JobFetchResult> {
    const id = checkJobId(this.args.id)
    const limit = storeLimit(await this.ctx.settings.get('job-store-limit'))
    // Named by the id asked for, never by the VM's answer.
    const root = outputsDir(id)
    return this.overVms(
      await this.selection(),
      async (over) => {
        const {client, signal, state} = over
        const selection = {...jobSearch(over, this.ctx, (message) => this.info(message)), signal}
        const stored = await storedJob(selection.configDir, id)
        // Its VM was deleted once the job had ended (down --jobs-done, a sweep): its outputs are in the job store.
        if (stored && !(await this.onSomeVm(over, selection, id))) {
          const fetch = await fetchStored(stored.dir, root, new CopyBudget(limit))
          return this.fetched({fetch, job: stored.job, vm: stored.vm}, `they stay in the job store, ${stored.dir}`)
        }

        return withJob(client, state, id, selection, async ({listed, record, session, vm}) => {
          if (listed.state === 'running') this.addWarning(`job ${id} still runs: its outputs may not be complete yet`)
          if (record.out.length === 0) this.addWarning(`job ${id} was started without --out: nothing to fetch`)
          const fetch = await fetchOutputs(session, record, {budget: new CopyBudget(limit), root, signal})
          const result: JobFetchResult = {fetch, job: jobOf(listed, this.ctx.clock.now()), vm: {name: vm.name, uid: vm.uid}}
          return this.fetched(result, `the outputs stay on the VM in ${record.workdir}`)
        })
      },
      () => ['Exiting at once; files under their final names are whole.'],
    )
  }
}
