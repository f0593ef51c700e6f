/**
 * Questions on the terminal, with one Ctrl-C rule: a prompt reads the terminal raw, so Ctrl-C arrives as a key
 * rather than a signal, and it ends the prompt as an interrupt (INTERRUPTED, exit 130, through the usual envelope),
 * never with a process exit of its own.
 */
import {TargonError} from '../core/errors.js'

const interrupted = (what: string) => new TargonError('INTERRUPTED', `interrupted at the prompt; ${what}`, {signal: 'SIGINT'})

/** A yes/no question on stderr; true only for y or yes. */
export async function confirm(question: string, onInterrupt: string): Promise<boolean> {
  const {createInterface} = await import('node:readline/promises')
  const prompt = createInterface({input: process.stdin, output: process.stderr})
  const stopped = new Promise<never>((_resolve, reject) => prompt.once('SIGINT', () => reject(interrupted(onInterrupt))))
  try {
    const answer = await Promise.race([prompt.question(`${question} [y/N] `), stopped])
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    prompt.close()
  }
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
