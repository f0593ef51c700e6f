/**
 * Questions on the terminal, with one Ctrl-C rule: a prompt reads the terminal raw, so Ctrl-C arrives as a key
 * rather than a signal, and it ends the prompt as an interrupt (INTERRUPTED, exit 130, through the usual envelope),
 * never with a process exit of its own. A signal sent from outside (kill -INT, kill -TERM) while a prompt waits
 * ends it the same way, as "no", with that signal's exit code.
 */
import {type InterruptSignal, TargonError} from '../core/errors.js'

/** Ctrl-C typed at the prompt (a key), or a signal sent to the process while it waited. */
const interrupted = (what: string, signal?: InterruptSignal) =>
  new TargonError('INTERRUPTED', `interrupted${signal ? ` by ${signal}` : ''} at the prompt; ${what}`, {signal: signal ?? 'SIGINT'})

/**
 * A yes/no question on stderr; true only for y or yes. `stop` is the run's interrupt signal (see interrupt.ts): once
 * it fires, the prompt stops waiting and the answer is an interrupt.
 */
export async function confirm(question: string, onInterrupt: string, stop?: AbortSignal): Promise<boolean> {
  const {createInterface} = await import('node:readline/promises')
  const prompt = createInterface({input: process.stdin, output: process.stderr})
  let onStop = () => {}
  const stopped = new Promise<never>((_resolve, reject) => {
    prompt.once('SIGINT', () => reject(interrupted(onInterrupt)))
    onStop = () => reject(interrupted(onInterrupt, signalOf(stop?.reason)))
    if (stop?.aborted) onStop()
    else stop?.addEventListener('abort', onStop, {once: true})
  })
  try {
    const answer = await Promise.race([prompt.question(`${question} [y/N] `), stopped])
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    stop?.removeEventListener('abort', onStop)
    prompt.close()
  }
}

/** The signal an interrupt's reason names (SIGINT when it names none). */
function signalOf(reason: unknown): InterruptSignal {
  return reason instanceof TargonError && reason.signal ? reason.signal : 'SIGINT'
}

/** A secret from stdin when it is not a terminal; else from a prompt on stderr that does not echo. */
export async function readSecret(question: string, onInterrupt: string): Promise<string> {
  if (!process.stdin.isTTY) {
    const chunks: Buffer[] = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString('utf8').trim()
  }

  // Raw before the question shows: a key typed at once (Ctrl-C included) must reach the prompt, not the terminal.
  process.stdin.setRawMode(true)
  process.stdin.resume()
  process.stderr.write(question)
  return new Promise((resolve, reject) => {
    let secret = ''
    const done = (finish: () => void) => {
      process.stdin.setRawMode(false)
      process.stdin.pause()
      process.stdin.off('data', onData)
      process.stderr.write('\n')
      finish()
    }

    const onData = (data: Buffer) => {
      for (const char of data.toString('utf8')) {
        if (char === '\r' || char === '\n' || char === '\u0004') return done(() => resolve(secret))
        if (char === '\u0003') return done(() => reject(interrupted(onInterrupt)))
        secret = char === '\u007f' ? secret.slice(0, -1) : secret + char
      }
    }

    process.stdin.on('data', onData)
  })
}
