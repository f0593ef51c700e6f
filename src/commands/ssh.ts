import {fchmodSync, fstatSync} from 'node:fs'
import {Args, Flags} from '@oclif/core'
import * as z from 'zod'

import {BaseCommand} from '../lib/cli/base-command.js'
import {TargonError, usageError} from '../lib/core/errors.js'
import {type KnownVm, findOneVm, refusedNamesWarning, readFleet} from '../lib/domain/fleet/fleet-read.js'
import {
  type Forwarding,
  type SshTarget,
  checkForwarding,
  ensurePin,
  forwardingArgs,
  hostConfigEntry,
  sshArgv,
  sshChildEnvironment,
} from '../lib/adapters/ssh/connect-info.js'
import {targetOf} from '../lib/domain/fleet/fan-out.js'
import {shellQuote} from '../lib/adapters/ssh/session.js'
import {SshConfigResultSchema, type SshResult} from '../lib/workflows/ssh/schema.js'
import {prose} from '../lib/core/output.js'
import {ownerScope, scoped} from '../lib/domain/fleet/owners.js'
import {recordFleetRead} from '../lib/domain/ledger/ledger.js'

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
    const [target, ...command] = this.positionals
    if (!this.flags.config && !target) throw usageError('no VM given', 'targon ssh <name|uid> [-- command], or targon ssh --config')
    const forwarding: Forwarding = checkForwarding({
      dynamic: this.flags['dynamic-forward'] ?? [],
      local: this.flags['local-forward'] ?? [],
      noCommand: this.flags['no-command'],
      remote: this.flags['remote-forward'] ?? [],
    })
    if (forwarding.noCommand && command.length > 0)
      throw usageError('-N runs no remote command, but one was given', 'drop -N or the command')
    const dir = this.ctx.settings.dir
    return this.withApi(async (client) => {
      const org = await this.ctx.org(client)
      const state = this.ctx.localState()
      const owners = await ownerScope(this.ctx.settings, false)
      const view = await readFleet(client, org, state, {
        clock: this.ctx.clock,
        historyBudget: this.ctx.historyBudget,
        readOwners: owners.owner !== null,
      })
      recordFleetRead(state, org, view, this.ctx.clock)
      const vms = view.vms.filter((vm) => !vm.gone)
      const fleet = await this.ctx.settings.get('fleet', this.flags.fleet)
      if (this.flags.config) {
        if (command.length > 0) throw usageError('--config takes no command', 'drop the words after --')
        const chosen = target
          ? [findOneVm(vms, target, fleet, owners)]
          : scoped(vms, owners).inScope.filter((each) => each.owned && each.fleet === fleet && each.status === 'running')
        const refused = refusedNamesWarning(chosen.filter((vm) => vm.workload.name_refused))
        if (refused) this.addWarning(refused)
        const hosts: SshResult[] = []
        for (const vm of chosen) hosts.push(await this.prepare(vm, dir, []))
        const config = hosts.map((host) => hostConfigEntry(host)).join('\n')
        if (!this.jsonEnabled()) {
          privateIfFile(1)
          this.log(config.trimEnd())
        }

        return {config, fleet, hosts}
      }

      const result = await this.prepare(findOneVm(vms, target as string, fleet, owners), dir, command, forwardingArgs(forwarding))
      if (this.jsonEnabled()) return result
      if (this.flags.print) {
        this.log(result.argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : shellQuote(arg))).join(' '))
        return result
      }

      // The ssh session may last hours: no API connection stays open meanwhile.
      await client.close()
      const code = await runSsh(result.argv, sshChildEnvironment(await this.ctx.settings.get('api-key')))
      if (code !== 0) this.exit(code)
      return result
    })
  }

  private async prepare(vm: KnownVm, dir: string, command: string[], options: string[] = []): Promise<SshResult> {
    const target: SshTarget = targetOf(vm, dir)
    const pinned = await ensurePin(target, (message) => this.info(message))
    return {
      argv: sshArgv(target, command, options),
      host: target.host,
      host_key: pinned.hostKey,
      host_key_alias: pinned.alias,
      identity_file: target.identityFile,
      known_hosts_file: pinned.file,
      name: vm.name,
      port: target.port,
      uid: vm.uid,
      user: 'ubuntu',
    }
  }
}

/**
 * Output redirected into a file (targon ssh --config > ~/.ssh/targon.conf) is made 0600, as ssh wants its config
 * files; a terminal or a pipe is left alone.
 */
function privateIfFile(fd: number): void {
  try {
    if (fstatSync(fd).isFile()) fchmodSync(fd, 0o600)
  } catch {
    // Not ours to change (another owner, a read-only mount): the output is the same.
  }
}

const FORWARDED_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM'] as const

async function runSsh(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const {spawn} = await import('node:child_process')
  const {constants} = await import('node:os')
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), {env, stdio: 'inherit'})
    // The session is ssh's: a signal to targon goes on to ssh, which decides what to do with it (Ctrl-C in a shell
    // on the VM is only a keystroke), and targon exits when ssh does, so no ssh and no forwarded port outlive it.
    let received: NodeJS.Signals | undefined
    const forwardToSsh = (signal: NodeJS.Signals) => {
      received ??= signal
      child.kill(signal)
    }

    for (const signal of FORWARDED_SIGNALS) process.on(signal, forwardToSsh)
    child.on('error', (error) =>
      reject(new TargonError('SSH_FAILED', `cannot run ssh: ${error.message}`, {hint: 'install the OpenSSH client'})),
    )
    child.on('close', (code, signal) => {
      for (const each of FORWARDED_SIGNALS) process.off(each, forwardToSsh)
      // Ended by a signal to targon: its exit says so (128 + its number), whatever ssh made of it.
      const ended = received ?? signal
      resolve(ended ? 128 + (constants.signals[ended] ?? 2) : (code ?? 255))
    })
  })
}
