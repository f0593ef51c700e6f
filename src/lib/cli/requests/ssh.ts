/**
 * `targon ssh`'s request: its positional words (the VM, then the command) and flags, checked into host entries to
 * print (--config) or a VM to reach, or the usage error (exit 2) that refuses them before the API is asked.
 */
import {usageError} from '../../core/errors.js'
import {checkForwarding, forwardingArgs} from '../../adapters/ssh/connect-info.js'
import type {SshRequest} from '../../workflows/ssh/ssh.js'

export interface SshFlags {
  config: boolean
  fleet?: string
  print: boolean
  'local-forward'?: string[]
  'remote-forward'?: string[]
  'dynamic-forward'?: string[]
  'no-command': boolean
}

export function parseSshRequest(positionals: string[], flags: SshFlags): SshRequest {
  const [target, ...command] = positionals
  if (!flags.config && !target) throw usageError('no VM given', 'targon ssh <name|uid> [-- command], or targon ssh --config')
  const forwarding = checkForwarding({
    dynamic: flags['dynamic-forward'] ?? [],
    local: flags['local-forward'] ?? [],
    noCommand: flags['no-command'],
    remote: flags['remote-forward'] ?? [],
  })
  if (forwarding.noCommand && command.length > 0) throw usageError('-N runs no remote command, but one was given', 'drop -N or the command')
  if (flags.config) {
    if (command.length > 0) throw usageError('--config takes no command', 'drop the words after --')
    return {fleetFlag: flags.fleet, kind: 'config', target}
  }

  return {
    command,
    fleetFlag: flags.fleet,
    kind: 'connect',
    options: forwardingArgs(forwarding),
    print: flags.print,
    target: target as string,
  }
}
