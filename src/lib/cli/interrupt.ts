/**
 * Signals for long-running commands: the first SIGINT, SIGTERM, SIGHUP (a closed terminal or dropped SSH
 * session) or SIGQUIT aborts the shared AbortController so that every wait and request stops and clean-up can
 * run; the command then exits 128 + the signal's number. A second signal exits at once, after saying what may
 * be left behind.
 */
import {type InterruptSignal, SIGNAL_EXIT_CODES, TargonError} from '../core/errors.js'
import {runExitCallbacks} from './exit-hooks.js'

export interface InterruptGuard {
  signal: AbortSignal
  dispose: () => void
}

const SIGNALS = Object.keys(SIGNAL_EXIT_CODES) as InterruptSignal[]

/** `say` writes a line for a person (stderr by default; an event where stderr carries events only). */
export function guardInterrupts(
  describeLeftovers: () => string[],
  say: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): InterruptGuard {
  const controller = new AbortController()
  let count = 0
  const onSignal = (name: InterruptSignal) => {
    count++
    if (count === 1) {
      say(`\n${name} received: stopping and cleaning up (send it again to exit at once)`)
      controller.abort(
        new TargonError('INTERRUPTED', `interrupted by ${name}`, {hint: 'run targon status to see what is left', signal: name}),
      )
      return
    }

    for (const line of describeLeftovers()) say(line)
    runExitCallbacks()
    process.exit(SIGNAL_EXIT_CODES[name])
  }

  for (const name of SIGNALS) process.on(name, onSignal)
  return {
    dispose() {
      for (const name of SIGNALS) process.off(name, onSignal)
    },
    signal: controller.signal,
  }
}
