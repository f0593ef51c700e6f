import {Args} from '@oclif/core'

import {FleetCommand, SELECTION_FLAGS, fanOutFlags} from '../lib/cli/fleet-command.js'
import {CopyBar, type CopyResult, type CopyVmResult, DEFAULT_COPY_PARALLEL, parseCopySpec, runCopy} from '../lib/workflows/copy/index.js'
import {prose} from '../lib/core/output.js'
import {copyFailedLines, copyResultLine, copySkippedWarnings} from '../lib/cli/render/cp.js'

export default class Cp extends FleetCommand<typeof Cp, 'cp'> {
  static summary = 'Copy files and directories to or from a VM, or every VM of a fleet, over SFTP.'

  static description = prose(`One side is VM:PATH (a name, uid or --name label, then a colon), the other a local path; a colon
after a slash does not count (./a:b is local). :PATH with no VM means every running VM of --fleet (or the VMs of
--vms); downloading from several VMs writes DEST/<vm>/<name>, so no VM overwrites another. Directories are copied
recursively, with their file modes. As with scp: into an existing directory under the source's name, else to the
new name given; a DEST ending in "/" must be an existing directory. An empty PATH is the home directory.
Runs over SFTP with the VM's pinned host key (a changed key refuses). Symbolic links inside a tree are skipped with
a warning, never followed; a listed name with "/" or ".." is refused; nothing is written outside the destination.
Each file is written under a temporary name and renamed once whole. Exit 0 only when every file was copied on every
VM; otherwise exit 12 (COPY_FAILED) with per-VM results (copied, failed, skipped).`)

  static examples = [
    {command: '<%= config.bin %> cp ./data worker1:/home/ubuntu/', description: 'Upload a directory into the home of VM worker1'},
    {command: '<%= config.bin %> cp tcli-default-k3v9x2qa:/home/ubuntu/out ./out', description: 'Download a directory (./out is created)'},
    {
      command: '<%= config.bin %> cp ./train.py :/home/ubuntu/ --fleet train',
      description: 'Upload a file to every running VM of fleet "train"',
    },
    {
      command: '<%= config.bin %> cp :/home/ubuntu/results ./results --fleet train',
      description: 'Download from every VM into ./results/<vm>/results',
    },
    {
      command: "<%= config.bin %> cp ./cfg :cfg --vms worker1,worker2 --json | jq '.data.results[] | {vm, ok, files}'",
      description: 'Named VMs, per-VM results as JSON',
    },
  ]

  static args = {
    source: Args.string({description: 'local path, or VM:PATH', ignoreStdin: true, required: true}),
    destination: Args.string({description: 'local path, or VM:PATH', ignoreStdin: true, required: true}),
  }

  static flags = {
    ...fanOutFlags({default: DEFAULT_COPY_PARALLEL, summary: 'VMs copying at once.'}),
    fleet: SELECTION_FLAGS.fleet({
      summary: 'The fleet of :PATH (every running VM), and of VMs named by label (default: config, else "default").',
    }),
    vms: SELECTION_FLAGS.vms({summary: 'Comma-separated VM names, uids or --name labels for :PATH, instead of the whole fleet.'}),
  }

  public async run(): Promise<CopyResult> {
    const spec = parseCopySpec(this.args.source, this.args.destination)
    const selection = await this.selection()
    let bar: CopyBar | undefined
    return this.overVms(
      selection,
      async ({client, configDir, connectMs, signal, state, vms}) => {
        try {
          return await runCopy(this.ctx, client, state, {
            ...vms,
            configDir,
            connectMs,
            info: (message) => {
              bar?.clear()
              this.info(message)
            },
            onProgress: (vm, progress) => bar?.update(vm, progress),
            onResult: (result) => {
              bar?.clear()
              this.report(result)
              bar?.finish(result.vm)
            },
            onStart: (vms) => (bar = CopyBar.forTerminal(vms.length, this.jsonEnabled() || this.eventsOnStderr(), this.ctx.clock)),
            parallel: this.flags.parallel,
            signal,
            spec,
          })
        } finally {
          bar?.clear()
        }
      },
      () => ['Exiting; files being copied keep only their temporary names (.<name>.targon-part-*).'],
    )
  }

  /** One line per VM on stdout; skipped entries as warnings, failed files on stderr. */
  private report(result: CopyVmResult): void {
    for (const warning of copySkippedWarnings(result)) this.addWarning(warning)
    if (this.jsonEnabled()) return
    this.log(copyResultLine(result))
    if (this.eventsOnStderr()) return
    for (const line of copyFailedLines(result)) process.stderr.write(`${line}\n`)
  }
}
