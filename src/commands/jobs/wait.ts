import {EVENT_FLAGS} from '../../lib/cli/base-command.js'
import {FleetCommand} from '../../lib/cli/fleet-command.js'
import {followDeletions} from '../../lib/cli/deletion-display.js'
import {hooksFlag} from '../../lib/cli/flags.js'
import {JOB_ID_ARG, JOB_SELECTION_FLAGS, jobSearch} from '../../lib/cli/job-command.js'
import {prose} from '../../lib/core/output.js'
import {checkJobId, completeJob, emptyFetch, jobOf, type JobOutcome, reopenVm, storeLimit, withJob} from '../../lib/workflows/job/index.js'
import {openLeave} from '../../lib/workflows/dstack/index.js'

export default class JobsWait extends FleetCommand<typeof JobsWait, 'jobs wait'> {
  static summary = 'Follow a job to its end, fetch its --out paths and apply its --down, as targon run would have.'

  static description = prose(`For a job whose run was interrupted or lost its connection: prints its log from the start,
follows it until the job ends, and copies the --out paths the run named (as this config directory recorded them when
it started the job, else as the VM's record says) into ./targon-out/<job id>/, within the bound of run's fetch
(job-store-limit bytes, 100,000 files, 64M left free on the disk); a VM that answers for another job is refused. If the run had
--down, the outputs go first into the config directory's job store (at most job-store-limit bytes, default 10G, as
down --jobs-done fetches them; targon jobs fetch copies them from there once the VM is gone), and the VM is deleted
after its pre-delete hook (reason job-done) only once they are there; a fetch that fails keeps the VM (its TTL,
budget and idle limits still apply), warns, and is notified once (to notify-url, when set). It exits as run does: 0,
or 12 with the job's exit_code (or COPY_FAILED when an output did not come). Ctrl-C stops waiting (the job goes on),
except under --down, where it cancels the job, fetches and deletes; during the VM's pre-delete hook it stops the hook
and deletes at once.`)

  static examples = [
    {command: '<%= config.bin %> jobs wait j-20261202-030527-a1b2c3', description: 'Pick up a job after a dropped connection'},
  ]

  static args = JOB_ID_ARG

  static flags = {...EVENT_FLAGS, ...JOB_SELECTION_FLAGS, hooks: hooksFlag()}

  public async run(): Promise<JobOutcome> {
    const id = checkJobId(this.args.id)
    const text = !this.jsonEnabled()
    const deletions = followDeletions(this.events, (line) => this.info(line))
    // A --down job's failing fetch is notified (notify-url), as down --jobs-done does; never in the way of a deletion.
    await this.useNotifyUrl(undefined, false)
    const fetchLimit = storeLimit(await this.ctx.settings.get('job-store-limit'))
    return this.overVms(
      await this.selection(),
      async (over) => {
        const {client, org, signal, state} = over
        const profile = (await this.ctx.settings.profile()).name
        const selection = {...jobSearch(over, this.ctx, (message) => this.info(message)), signal}
        return withJob(client, state, id, selection, async ({listed, record, session, vm}) => {
          const result: JobOutcome = {
            deleted: null,
            exit_code: null,
            fetch: emptyFetch(),
            job: jobOf(listed, this.ctx.clock.now()),
            sync: null,
            tail: [],
            vm: {name: vm.name, uid: vm.uid},
          }
          const dstack = record.down ? await openLeave(this.ctx, false, this.traceSink()) : undefined
          return completeJob(
            {client, record, result, session, state, vm},
            {
              clock: this.ctx.clock,
              configDir: selection.configDir,
              down: record.down,
              dstack,
              fetchLimit,
              fleet: selection.fleet,
              historyBudget: this.ctx.historyBudget,
              hooks: this.flags.hooks,
              info: (message) => this.info(message),
              onDeleted: deletions.onResult,
              onDeletion: deletions.onEvent,
              onLine: (line) => {
                if (text && !this.eventsOnStderr()) process.stdout.write(`${line}\n`)
                else this.events.emit({detail: line, status: 'progress', type: 'exec'})
              },
              org,
              owners: selection.owners,
              profile,
              reconcileMs: await this.ctx.reconcileWindowMs(),
              connectMs: selection.connectMs,
              reopen: () => reopenVm(client, state, vm, selection),
              signal,
              store: {
                configDir: selection.configDir,
                notifyFetchFailing: (notice) => this.notifyFetchFailing(notice),
                profile,
                storeLimit: fetchLimit,
              },
              warn: this.ctx.warn,
            },
          ).finally(() => dstack?.handle.client.close())
        })
      },
      () => ['Exiting at once; the job goes on on its VM.'],
    )
  }
}
