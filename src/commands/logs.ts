import {Args, Flags} from '@oclif/core'

import {FleetCommand, SELECTION_FLAGS} from '../lib/cli/fleet-command.js'
import {isTargonError, usageError} from '../lib/core/errors.js'
import {FOLLOW_INTERVAL_MS, type LogsResult, runLogs} from '../lib/workflows/logs/index.js'
import {printable, prose} from '../lib/core/output.js'

export default class Logs extends FleetCommand<typeof Logs, 'logs'> {
  static summary = "Show a VM's serial console: the boot, and why a VM that never opens SSH is stuck."

  static description = prose(`Reads the console log that Targon keeps for the VM (type serial) and prints it to stdout, one line
per line. --tail keeps the last lines; --follow keeps reading every ${FOLLOW_INTERVAL_MS / 1000} s and prints new lines as they come,
until the VM is deleted or Ctrl-C (exit 130). A name or uid that matches nothing exits 4. Works for any VM of the org,
also one that is crashed or still provisioning.`)

  static examples = [
    {command: '<%= config.bin %> logs tcli-default-k3v9x2qa', description: 'The whole console log'},
    {command: '<%= config.bin %> logs worker1 --fleet train --tail 50', description: 'The last 50 lines of VM worker1 of fleet "train"'},
    {command: '<%= config.bin %> logs tcli-default-k3v9x2qa --follow', description: 'Watch a VM boot (Ctrl-C to stop)'},
    {command: "<%= config.bin %> logs tcli-default-k3v9x2qa --json | jq -r '.data.lines[]'", description: 'The lines as JSON'},
  ]

  static args = {vm: Args.string({description: 'VM name, uid or --name label', ignoreStdin: true, required: true})}

  static flags = {
    fleet: SELECTION_FLAGS.fleet({summary: 'The fleet of a VM given by its short --name label (default: config, else "default").'}),
    follow: Flags.boolean({
      char: 'f',
      default: false,
      exclusive: ['json'],
      summary: 'Keep printing new console lines until the VM is deleted or Ctrl-C.',
    }),
    tail: Flags.integer({max: 100_000, min: 0, summary: 'Print only the last N lines.'}),
  }

  public async run(): Promise<LogsResult> {
    const target = this.args.vm
    if (target.trim() === '') throw usageError('no VM given', 'targon logs <name|uid>')
    const selection = await this.selection()
    return this.overVms(
      selection,
      async ({client, org, signal, state}) => {
        try {
          const text = !this.jsonEnabled()
          const result = await runLogs(this.ctx, client, state, {
            fleet: selection.fleet,
            follow: this.flags.follow,
            onLines: (lines) => {
              if (text && lines.length > 0) process.stdout.write(lines.map((line) => `${printable(line)}\n`).join(''))
            },
            org,
            owners: selection.owners,
            signal,
            tail: this.flags.tail,
            target,
          })
          if (text && result.lines.length === 0 && !this.flags.follow) this.info(`No console output from ${result.name ?? result.uid} yet.`)
          return result
        } catch (error) {
          // Ctrl-C is how one stops following: no error and nothing left to look for, only its exit code.
          if (this.flags.follow && isTargonError(error) && error.code === 'INTERRUPTED') {
            this.info(`Stopped following (${error.signal ?? 'SIGINT'}).`)
            this.exit(error.exitCode)
          }

          throw error
        }
      },
      () => ['Exiting.'],
    )
  }
}
