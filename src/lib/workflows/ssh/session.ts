/** The interactive part of `targon ssh`: the system OpenSSH client, run in the foreground until it exits. */
import type {RunContext} from '../run-context.js'
import {sshChildEnvironment} from '../../adapters/ssh/connect-info.js'
import {TargonError} from '../../core/errors.js'

const FORWARDED_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM'] as const

/** Runs `argv` (ssh's command line) with the terminal, in an environment without the API key; its exit code. */
export async function runSsh(run: Pick<RunContext, 'settings'>, argv: string[]): Promise<number> {
  const env = sshChildEnvironment(await run.settings.get('api-key'))
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
