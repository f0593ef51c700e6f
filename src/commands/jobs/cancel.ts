import {FleetCommand} from '../../lib/cli/fleet-command.js'
import {JOB_ID_ARG, JOB_SELECTION_FLAGS, jobSearch, stateInWords} from '../../lib/cli/job-command.js'
import {prose} from '../../lib/core/output.js'
import {afterFollow, cancelJob, checkJobId, type JobCancelResult, jobOf, readJobs, withJob} from '../../lib/workflows/job/index.js'

export default class JobsCancel extends FleetCommand<typeof JobsCancel, 'jobs cancel'> {
  static summary = 'Stop a running job (its unit, with all its processes); its log stays.'

  static description = prose(`Marks the job cancelled and stops its systemd unit on the VM (TERM to all its processes,
KILL after systemd's stop timeout). Its log and files stay: targon jobs logs and jobs fetch still work. A job that
has already ended is left as it is (cancelled: false). Cancelling does not delete the VM, even for a --down job (targon
down does, and down --jobs-done or the sweep of the directory that started it, as for any ended --down job).`)

  static examples = [{command: '<%= config.bin %> jobs cancel j-20261202-030527-a1b2c3', description: 'Stop a job'}]

  static args = JOB_ID_ARG

  static flags = {...JOB_SELECTION_FLAGS}

  public async run(): Promise<JobCancelResult> {
    const id = checkJobId(this.args.id)
    return this.overVms(await this.selection(), async (over) => {
      const search = jobSearch(over, this.ctx, (message) => this.info(message))
      return withJob(over.client, over.state, id, search, async ({listed, session, vm}) => {
        const running = listed.state === 'running'
        if (running) await cancelJob(session, id)
        const [after = listed] = running ? (await readJobs(session, id)).jobs : [listed]
        const job = jobOf(afterFollow(listed, after, this.ctx.clock.now()), this.ctx.clock.now())
        if (!this.jsonEnabled())
          this.log(running ? `cancelled ${id} on ${vm.name ?? vm.uid}` : `${id} had already ended: ${stateInWords(job)}`)
        return {cancelled: running, job, vm: {name: vm.name, uid: vm.uid}}
      })
    })
  }
}
