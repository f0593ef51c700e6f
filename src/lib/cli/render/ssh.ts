/** What `targon ssh` prints: ssh_config Host entries (--config), and the command line of --print. */
import {hostConfigEntry} from '../../adapters/ssh/connect-info.js'
import {shellQuote} from '../../adapters/ssh/session.js'
import type {SshResult} from '../../workflows/ssh/schema.js'

/** The Host entries of ssh --config, one per VM, an empty line between two. */
export function sshConfigText(hosts: readonly SshResult[]): string {
  return hosts.map((host) => hostConfigEntry(host)).join('\n')
}

/** ssh --print: the command line as a shell reads it back, each word quoted only where it must be. */
export function sshCommandLine(argv: readonly string[]): string {
  return argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : shellQuote(arg))).join(' ')
}
