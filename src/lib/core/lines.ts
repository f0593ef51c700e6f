/**
 * Streamed output cut into lines. A transport hands over chunks of any size, so a line, and in bytes even a UTF-8
 * character, may be split across two of them: bytes are decoded across chunk boundaries, and a line is emitted once
 * its newline arrives, without a CR before it.
 */
import {StringDecoder} from 'node:string_decoder'

/** The longest line held back for its newline; a longer one is passed on in pieces of this length. */
export const MAX_LINE_CHARS = 1024 * 1024

export class LineSplitter {
  private rest = ''
  private readonly decoder = new StringDecoder('utf8')

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer | string): void {
    const lines = (this.rest + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk))).split('\n')
    this.rest = lines.pop() ?? ''
    for (const line of lines) this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line)
    // Output without newlines (a VM's bytes are untrusted) is not held without end: a line this long is cut here.
    while (this.rest.length > MAX_LINE_CHARS) {
      this.onLine(this.rest.slice(0, MAX_LINE_CHARS))
      this.rest = this.rest.slice(MAX_LINE_CHARS)
    }
  }

  /** The last line, if it has no newline. */
  flush(): void {
    const rest = this.rest + this.decoder.end()
    this.rest = ''
    if (rest !== '') this.onLine(rest)
  }
}

/** A stream's chunks as text, decoded across chunk boundaries (a chunk's own toString() garbles a split character). */
export function textDecoder(): (chunk: Buffer) => string {
  const decoder = new StringDecoder('utf8')
  return (chunk) => decoder.write(chunk)
}
