/**
 * Ctrl-C and SIGTERM for long-running commands: the first signal aborts the shared
 * AbortController so that every wait and request stops and clean-up can run; a second
 * one exits 130 at once, after saying what may be left behind.
 */
import {TargonError} from './errors.js'

export interface InterruptGuard {
  signal: AbortSignal
  dispose: () => void
}

export function guardInterrupts(describeLeftovers: () => string[]): InterruptGuard {
  const controller = new AbortController()
  let count = 0
  const onSignal = (name: NodeJS.Signals) => {
    count++
    if (count === 1) {
      process.stderr.write(`\n${name} received: stopping and cleaning up (send it again to exit at once)\n`)
      controller.abort(new TargonError('INTERRUPTED', `interrupted by ${name}`, {hint: 'run targon status to see what is left'}))
      return
    }

    for (const line of describeLeftovers()) process.stderr.write(`${line}\n`)
    process.exit(130)
  }

  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    dispose() {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
    signal: controller.signal,
  }
}
