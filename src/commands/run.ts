import {Flags} from '@oclif/core'

import {BaseCommand, EVENT_FLAGS} from '../lib/cli/base-command.js'
import {followDeletions} from '../lib/cli/deletion-display.js'
import {durationFlag, hooksFlag, usdFlag} from '../lib/cli/flags.js'
import {dryRunLines, jobStartedLine} from '../lib/cli/render/run.js'
import {parseRunRequest} from '../lib/cli/requests/run.js'
import {prose} from '../lib/core/output.js'
import {unguardedText} from '../lib/cli/render/unguarded.js'
import {type JobOutcome, type JobPlan, localWorkdir, planJob, prepareJob, runPreparedJob, TAIL_LINES} from '../lib/workflows/job/index.js'
import {guardCoverage} from '../lib/workflows/guard/index.js'

export default class Run extends BaseCommand<typeof Run, 'run'> {
  static summary = 'Run a job on a VM: sync the working directory, start the command, follow its log, fetch its outputs.'

  static description = prose(`VM is a name, uid or --name label, found among the selection's VMs as exec and down find them
(with an owner set, that owner's VMs first). When it names no VM but an offer (or --gpu names a model instead), run
rents one exactly as up would (--max-price required, --ttl, --max-cost, --wait, --fleet, the bootstrap), with an idle
limit of 30m unless --idle says otherwise; a word that names neither, or both a VM and an offer when run may rent (a
price cap is set), is refused (exit 2) before anything is rented (the VM's uid names it alone), and what run rented is deleted again when the job could not start (a failure or an interrupt). The working directory (--workdir, default the current one) is synced to
/home/ubuntu/targon/work/<id> on the VM, one directory per local directory, over the VM's pinned SFTP connection (--no-sync skips it), after the rules of .gitignore and .targonignore files. Never sent, whatever they say: targon's
config directory (its keys, the API key) and ~/.ssh; held back unless a .targonignore negation lets it through (!.env):
what looks like a private key or credentials (id_* but *.pub, *.pem, .netrc, .aws/, .docker/config.json,
.git-credentials, .env*). A home directory or / is refused (exit 2, with what it would send) unless --workdir names
it. --dry-run prints what the sync would send and hold back, and why, and rents, connects to and sends nothing. The command (the words after --, joined into one line for the remote shell, as exec reads it)
then runs there as ubuntu in a login shell, as the systemd unit targon-job-<job id>, detached from the SSH session: a
dropped connection or a closed laptop does not stop it. --env values are exported before it (quoted for the remote
shell; they are visible on the VM, and to local ps in this command line). Its output goes to a log and its exit code
to a file under /home/ubuntu/.targon/jobs/<job id>/, outside the synced directory.

The log is streamed (stdout; lines cut at 4096 characters, control characters escaped) until the job ends; then each
--out path (relative to the job's directory on the VM, a file or a tree, never outside it) is copied into
./targon-out/<job id>/, also when the job failed: at most job-store-limit bytes (default 10G; targon config set
job-store-limit 50G) and 100,000 files, leaving 64M free on the local disk; past that the fetch stops, keeping what
came, and exits 12. With --down, the VM is then deleted after its pre-delete hook (TARGON_DELETE_REASON=job-done). Exit 0 when the job exited 0 and its outputs came home; 12 otherwise
(REMOTE_COMMAND_FAILED with the job's exit_code, or COPY_FAILED), with the last ${TAIL_LINES} log lines as tail.

Ctrl-C after the start leaves the job running (exit 130) and says how to follow and stop it; with --down it cancels
the job, fetches the --out paths and deletes the VM instead, without its hook. Once the job has ended, Ctrl-C stops
the fetch or the VM's pre-delete hook (exit 130), and --down still deletes the VM, at once. --detach returns once the job has started (exit 0, the job in
data.job). A --down job, detached or not, is recorded in the config directory, and down --jobs-done (a guard's sweep)
deletes the VM once it has ended, also when the run that followed it was killed or cut off; for a detached one without
a guard for this directory, or from one that holds no record of the VM, a warning says that nothing else will.`)

  static usage = [
    'run VM [--workdir DIR] [--out PATH...] [--env K=V...] [--down] [--detach] [--no-sync] [--dry-run] -- COMMAND...',
    'run OFFER|--gpu MODEL --max-price USD [--ttl DUR] [--idle DUR] [--max-cost USD] [--wait DUR] [...] -- COMMAND...',
  ]

  static examples = [
    {
      command: "<%= config.bin %> run gpu1 --out results -- 'python train.py --epochs 3'",
      description: 'Sync ., train, bring ./targon-out/<job>/results home',
    },
    {command: '<%= config.bin %> run gpu1 --down --out model.pt -- python train.py', description: 'Delete the VM once the job has ended'},
    {
      command: "<%= config.bin %> run rtx6000b-small --max-price 1.8 --down --out results -- 'python train.py'",
      description: 'Rent a VM for the job, and delete it once the job has ended',
    },
    {command: '<%= config.bin %> run gpu1 --dry-run -- python train.py', description: 'What the sync would send and hold back, and why'},
    {
      command: "<%= config.bin %> run gpu1 --json -- ./bench.sh | jq '.data | {id: .job.id, exit_code, tail}'",
      description: 'The job, its exit code and the last log lines as JSON',
    },
  ]

  static strict = false

  static flags = {
    ...EVENT_FLAGS,
    detach: Flags.boolean({
      default: false,
      summary: 'Return once the job has started (follow it with targon jobs logs ID -f, or targon jobs wait ID).',
    }),
    down: Flags.boolean({
      default: false,
      summary: 'Delete the VM (after its pre-delete hook) once the job has ended and its outputs are fetched.',
    }),
    env: Flags.string({multiple: true, summary: 'NAME=VALUE exported for the command; repeatable (visible on the VM and to local ps).'}),
    fleet: Flags.string({summary: 'The fleet of VMs named by label, and of a VM run rents (default: config, else "default").'}),
    gpu: Flags.string({summary: 'Rent a VM with this GPU model for the job (the cheapest offer under --max-price), as up --gpu.'}),
    idle: durationFlag('--idle', {summary: 'For a VM run rents: its idle limit (default 30m), as up --idle.'}),
    'max-cost': usdFlag('--max-cost', 'a budget in USD per VM', {summary: 'For a VM run rents: its budget in USD, as up --max-cost.'}),
    'max-price': Flags.string({
      helpValue: '<USD>',
      summary: 'For a VM run rents: the price cap in USD/h (required to rent, or targon config set max-price).',
    }),
    ttl: durationFlag('--ttl', {summary: 'For a VM run rents: its lifetime, e.g. 6h, as up --ttl.'}),
    wait: durationFlag('--wait', {summary: 'For a VM run rents: wait up to this long for capacity under the cap, as up --wait.'}),
    hooks: hooksFlag(),
    'no-sync': Flags.boolean({default: false, summary: 'Do not sync the working directory; run in its directory on the VM as it is.'}),
    out: Flags.string({
      multiple: true,
      summary: "A file or directory the job makes, relative to the job's directory, to copy into ./targon-out/<job>/; repeatable.",
    }),
    workdir: Flags.string({
      summary: 'The local directory to sync and run in (default: the current directory; a home directory or / only when named here).',
    }),
    'dry-run': Flags.boolean({
      default: false,
      summary: 'Print what the sync would send and hold back, and why; rent nothing, connect to nothing.',
    }),
  }

  public async run(): Promise<JobPlan | JobOutcome> {
    const fleet = await this.ctx.settings.get('fleet', this.flags.fleet)
    const maxPrice = (await this.ctx.settings.get('max-price', this.flags['max-price'])) ?? null
    const request = parseRunRequest({argv: this.argv, flags: this.flags, positionals: this.positionals}, {fleet, maxPrice})
    const workdir = await localWorkdir(this.ctx, request)
    if (request.dryRun) return this.renderPlan(await planJob(request, workdir))
    const job = await prepareJob(this.ctx, request, workdir)
    const deletions = followDeletions(this.events, (line) => this.info(line))
    if (request.detach && request.down) await this.warnUnguarded()
    return this.withApi(
      async (client, signal) =>
        runPreparedJob(this.ctx, client, signal, job, {
          info: (message) => this.info(message),
          onDeleted: deletions.onResult,
          onDeletion: deletions.onEvent,
          onLine: (line) => {
            if (!this.jsonEnabled() && !this.eventsOnStderr()) process.stdout.write(`${line}\n`)
            else this.events.emit({detail: line, status: 'progress', type: 'exec'})
          },
          onStarted: (started, vm) => this.info(jobStartedLine(started, vm, request.detach, job.place)),
        }),
      () => ['Exiting at once; the job, if it started, goes on on the VM.'],
    )
  }

  /** run --dry-run: the plan as a table on stdout and its sums on stderr, or as it is with --json. */
  private renderPlan(plan: JobPlan): JobPlan {
    if (this.jsonEnabled()) return plan
    const {notes, table} = dryRunLines(plan, this.flags.gpu)
    if (table !== null) this.log(table)
    for (const note of notes) this.info(note)
    return plan
  }

  /** A detached --down job is deleted by a sweep (down --jobs-done) once it has ended: say when no guard runs one here. */
  private async warnUnguarded(): Promise<void> {
    const guard = guardCoverage(this.ctx.settings.dir, (await this.ctx.settings.profile()).name, this.ctx.warn)
    if (guard.kind === null)
      this.addWarning(
        unguardedText({
          what: 'this config directory',
          then: 'nothing will delete the VM when the detached job ends; run targon jobs wait <id> later, or targon guard install',
        }),
      )
  }
}
