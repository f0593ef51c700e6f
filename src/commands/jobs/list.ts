import {FleetCommand} from '../../lib/cli/fleet-command.js'
import {JOB_SELECTION_FLAGS, durationInWords, jobSearch, stateInWords} from '../../lib/cli/job-command.js'
import {dash, prose, renderTable} from '../../lib/core/output.js'
import {type JobsResult, listJobs} from '../../lib/workflows/job/index.js'

export default class Jobs extends FleetCommand<typeof Jobs, 'jobs'> {
  static summary = 'List the jobs of targon run on the running VMs of a fleet, or on the VMs named.'

  static description = prose(`Reads each VM's jobs on the VM itself (over SSH, with the project key), so any directory that
holds the key sees them, whoever started them: id, VM, command, state (running, succeeded, failed (N), cancelled,
lost: it ended without an exit code), when it started, how long it ran, and whether --down is pending (the VM is to
be deleted once it has ended). A VM whose jobs cannot be read is named in a warning and in data.unreadable. A VM with
very many jobs is listed newest first, up to 2 MiB of job records; a warning counts its older ended jobs left out.`)

  static examples = [
    {command: '<%= config.bin %> jobs', description: 'The jobs of the running VMs of the default fleet'},
    {command: "<%= config.bin %> jobs --vms gpu1 --json | jq '.data.jobs[] | {id, state, exit_code}'", description: 'One VM, as JSON'},
  ]

  static flags = {...JOB_SELECTION_FLAGS}

  public async run(): Promise<JobsResult> {
    return this.overVms(await this.selection(), async (over) => {
      const result = await listJobs(
        over.client,
        over.state,
        jobSearch(over, this.ctx, (message) => this.info(message)),
      )
      if (!this.jsonEnabled()) {
        if (result.jobs.length === 0) this.info('No jobs.')
        else
          this.log(
            renderTable(
              [
                {header: 'ID', value: (job) => job.id},
                {header: 'VM', value: (job) => job.vm.name ?? job.vm.uid},
                {header: 'STATE', value: (job) => stateInWords(job)},
                {header: 'STARTED', value: (job) => dash(job.started_at)},
                {header: 'DURATION', value: (job) => durationInWords(job.duration_ms)},
                {header: 'DOWN', value: (job) => (job.down_pending ? 'pending' : '-')},
                {header: 'COMMAND', value: (job) => job.command},
              ],
              result.jobs,
            ),
          )
      }

      return result
    })
  }
}
