import {Args, Flags} from '@oclif/core'
import * as z from 'zod'

import {BaseCommand} from '../lib/cli/base-command.js'
import {privateIfFile} from '../lib/cli/private-output.js'
import {sshCommandLine, sshConfigText} from '../lib/cli/render/ssh.js'
import {parseSshRequest} from '../lib/cli/requests/ssh.js'
import {prose} from '../lib/core/output.js'
import {runSsh, SshConfigResultSchema, sshConnection, sshHosts, type SshResult} from '../lib/workflows/ssh/index.js'

export default class Ssh extends BaseCommand<typeof Ssh, 'ssh'> {
  static summary = 'Open a shell on a VM, or run a command there (the exit code passes through).'

  static description = prose(`Runs the system OpenSSH client as ubuntu@<ip> -p <port> with the project key and this VM's
pinned host key (StrictHostKeyChecking=yes; ~/.ssh/known_hosts is never touched). The address is refreshed from
the API on every call. With a command, targon exits with the remote exit code (255 is ssh's own error).

The words after -- are joined with spaces into one line for the remote shell, as OpenSSH and targon exec do: quote the
whole command to keep it together (targon ssh vm -- 'df -h / | tail -1').
-L, -R, -D and -N pass OpenSSH's port forwarding through, e.g. for a notebook or a dashboard on the VM.`)

  static usage = [
    'ssh VM [-- COMMAND...]',
    'ssh VM [-L SPEC]... [-R SPEC]... [-D SPEC]... [-N]',
    'ssh VM --print [-- COMMAND...]',
    'ssh --config [--fleet FLEET]',
  ]

  static examples = [
    {command: '<%= config.bin %> ssh tcli-default-k3v9x2qa', description: 'An interactive shell'},
    {
      command: '<%= config.bin %> ssh worker1',
      description: 'A VM by the label it got from up --name worker1 (in the default or --fleet fleet)',
    },
    {command: '<%= config.bin %> ssh tcli-default-k3v9x2qa -- nvidia-smi -L', description: 'Run one command'},
    {command: '<%= config.bin %> ssh tcli-default-k3v9x2qa --print', description: 'Print the ssh command line instead'},
    {
      command: '<%= config.bin %> ssh tcli-default-k3v9x2qa -N -L 8888:localhost:8888',
      description: "Reach the VM's Jupyter on localhost:8888 (Ctrl-C ends the tunnel)",
    },
    {
      command: '<%= config.bin %> ssh --config > ~/.ssh/targon.conf',
      description: 'Host entries for every VM of the fleet, replacing the file (0600); use it with Include',
    },
  ]

  static args = {vm: Args.string({ignoreStdin: true, description: 'VM name, uid or --name label', required: false})}
  static strict = false

  static flags = {
    config: Flags.boolean({
      default: false,
      summary:
        'Print ssh_config Host entries for every running VM of the fleet (or for the VM named); a file it is redirected into is made 0600.',
    }),
    fleet: Flags.string({summary: 'The fleet of --config, and of a VM given by its short --name label (default: config, else "default").'}),
    print: Flags.boolean({default: false, summary: 'Print the ssh command line instead of running it.'}),
    'local-forward': Flags.string({
      char: 'L',
      exclusive: ['config'],
      multiple: true,
      summary: 'Forward a local port to the VM, as ssh -L: [bind:]port:host:hostport.',
    }),
    'remote-forward': Flags.string({
      char: 'R',
      exclusive: ['config'],
      multiple: true,
      summary: 'Forward a port of the VM to this side, as ssh -R: [bind:]port:host:hostport.',
    }),
    'dynamic-forward': Flags.string({
      char: 'D',
      exclusive: ['config'],
      multiple: true,
      summary: 'A SOCKS proxy through the VM, as ssh -D: [bind:]port.',
    }),
    'no-command': Flags.boolean({
      char: 'N',
      default: false,
      exclusive: ['config'],
      summary: 'Run no remote command, only forward ports, as ssh -N.',
    }),
  }

  public async run(): Promise<SshResult | z.infer<typeof SshConfigResultSchema>> {
    const request = parseSshRequest(this.positionals, this.flags)
    const info = (message: string) => this.info(message)
    return this.withApi(async (client) => {
      if (request.kind === 'config') {
        const {fleet, hosts} = await sshHosts(this.ctx, client, request, info)
        const config = sshConfigText(hosts)
        if (!this.jsonEnabled()) {
          privateIfFile(1)
          this.log(config.trimEnd())
        }

        return {config, fleet, hosts}
      }

      const result = await sshConnection(this.ctx, client, request, info)
      if (this.jsonEnabled()) return result
      if (request.print) {
        this.log(sshCommandLine(result.argv))
        return result
      }

      // The ssh session may last hours: no API connection stays open meanwhile.
      await client.close()
      const code = await runSsh(this.ctx, result.argv)
      if (code !== 0) this.exit(code)
      return result
    })
  }
}
