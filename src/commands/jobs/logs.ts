import {Flags} from '@oclif/core'

import {FleetCommand} from '../../lib/cli/fleet-command.js'
import {JOB_ID_ARG, JOB_SELECTION_FLAGS, jobSearch} from '../../lib/cli/job-command.js'
import {prose} from '../../lib/core/output.js'
import {afterFollow, checkJobId, followJob, type JobLogsResult, jobOf, reopenVm, withJob} from '../../lib/workflows/job/index.js'

export default class JobsLogs extends FleetCommand<typeof JobsLogs, 'jobs logs'> {
  static summary = "Print a job's log; with -f, follow it until the job ends."

  static description = prose(`The log of a job of targon run (its stdout and stderr), read on its VM: lines cut at 4096
characters, control characters escaped. With -f it follows the log until the job ends, as run does (a dropped
connection is opened again); Ctrl-C stops following, never the job. With --json, the job and the last 20 lines.
An id that no VM of the selection has exits 4.`)

  static examples = [{command: '<%= config.bin %> jobs logs j-20261202-030527-a1b2c3 -f', description: 'Follow a job to its end'}]

  static args = JOB_ID_ARG

  static flags = {
    ...JOB_SELECTION_FLAGS,
    follow: Flags.boolean({char: 'f', default: false, summary: 'Follow the log until the job ends.'}),
  }

  public async run(): Promise<JobLogsResult> {
    const id = checkJobId(this.args.id)
    const text = !this.jsonEnabled()
    return this.overVms(
      await this.selection(),
      async (over) => {
        const {client, signal, state} = over
        const selection = {...jobSearch(over, this.ctx, (message) => this.info(message)), signal}
        return withJob(client, state, id, selection, async ({listed, session, vm}) => {
          const followed = await followJob(session, id, {
            clock: this.ctx.clock,
            onLine: (line) => {
              if (text) process.stdout.write(`${line}\n`)
            },
            once: !this.flags.follow,
            reopen: () => reopenVm(client, state, vm, selection),
            signal,
          })
          const job = jobOf(afterFollow(listed, followed, this.ctx.clock.now()), this.ctx.clock.now())
          return {job, tail: followed.tail, vm: {name: vm.name, uid: vm.uid}}
        })
      },
      () => ['Exiting; the job goes on on its VM.'],
    )
  }
}
