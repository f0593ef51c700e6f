import {Flags} from '@oclif/core'

import {FleetCommand, SELECTION_FLAGS, fanOutFlags} from '../lib/cli/fleet-command.js'
import {isTargonError, usageError} from '../lib/core/errors.js'
import {DEFAULT_EXEC_PARALLEL, EXEC_TAIL_LINES, type ExecResult, runExec} from '../lib/workflows/exec/index.js'
import {prose} from '../lib/core/output.js'
import {execFailureLines} from '../lib/cli/render/exec.js'

export default class Exec extends FleetCommand<typeof Exec, 'exec'> {
  static summary = 'Run one command on every VM of a fleet, or on the VMs named, in parallel.'

  static description = prose(`Opens one SSH connection per VM (user ubuntu, the project key, the VM's pinned host key; a changed key
refuses) and runs the command there, at most --parallel VMs at once. Each output line is prefixed with the VM's
name; lines of different VMs never interleave (remote stderr goes to stderr). Without --vms, every running VM of the
fleet. Exit 0 when the command exits 0 everywhere; otherwise exit 12 (REMOTE_COMMAND_FAILED) with per-VM results:
exit code, duration and the last ${EXEC_TAIL_LINES} lines of output (--json shows them for every VM); without --json, stderr
names each VM that failed and why.

The words after -- are joined with spaces into one line for the remote shell, as OpenSSH and targon ssh do: quote the
whole command to keep it together. Ctrl-C sends the remote commands SIGTERM and ends the run at once (exit 130).`)

  static usage = ['exec [--fleet FLEET | --vms VM,...] [--parallel N] -- COMMAND...']

  static examples = [
    {command: '<%= config.bin %> exec --fleet train -- nvidia-smi -L', description: 'Every running VM of fleet "train"'},
    {command: "<%= config.bin %> exec --vms worker1,worker2 -- 'df -h / | tail -1'", description: 'Two VMs by their --name labels'},
    {
      command: "<%= config.bin %> exec --fleet train --json -- 'python3 check.py' | jq '.data.results[] | {name, exit_code}'",
      description: 'Per-VM exit codes as JSON',
    },
  ]

  static strict = false

  static flags = {
    ...fanOutFlags({default: DEFAULT_EXEC_PARALLEL, summary: 'VMs running the command at once.'}),
    fleet: SELECTION_FLAGS.fleet({
      summary: 'The fleet whose running VMs run the command, and of VMs named by label (default: config, else "default").',
    }),
    raw: Flags.boolean({
      default: false,
      summary: "Pass the VMs' output through as it is, control characters included (by default they are shown escaped, e.g. \\x1b).",
    }),
    vms: SELECTION_FLAGS.vms({summary: 'Comma-separated VM names, uids or --name labels, instead of the whole fleet.'}),
  }

  public async run(): Promise<ExecResult> {
    const command = this.positionals.join(' ').trim()
    if (command === '') throw usageError('no command given', "targon exec --fleet F -- <command>, e.g. targon exec -- 'uptime'")
    const selection = await this.selection()
    return this.overVms(
      selection,
      async ({client, configDir, connectMs, signal, state, vms}) => {
        try {
          return await runExec(this.ctx, client, state, {
            ...vms,
            command,
            configDir,
            connectMs,
            info: (message) => this.info(message),
            onLine: (vm, stream, line) => this.vmLine(vm, stream, line, this.flags.raw),
            parallel: this.flags.parallel,
            signal,
          })
        } catch (error) {
          if (!this.jsonEnabled() && !this.eventsOnStderr() && isTargonError(error) && error.data)
            for (const line of execFailureLines(error.data as ExecResult)) process.stderr.write(`${line}\n`)
          throw error
        }
      },
      () => ['Exiting; remote commands may still be running.'],
    )
  }
}
