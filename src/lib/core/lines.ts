/**
 * Streamed output cut into lines. A transport hands over chunks of any size, so a line, and in bytes even a UTF-8
 * character, may be split across two of them: bytes are decoded across chunk boundaries, and a line is emitted once
 * its newline arrives, without a CR before it.
 */
import {StringDecoder} from 'node:string_decoder'

/** The longest line held back for its newline; a longer one is passed on in pieces of this length. */
export const MAX_LINE_CHARS = 64 * 1024

export class LineSplitter {
  private rest = ''
  private readonly decoder = new StringDecoder('utf8')

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer | string): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk)
    // Only the new text is searched: a long line in the making is appended to, never split again chunk by chunk.
    let start = 0
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      const line = this.cut(this.rest + text.slice(start, end))
      this.rest = ''
      start = end + 1
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line)
    }

    this.rest = this.cut(this.rest + text.slice(start))
  }

  /**
   * Output without newlines (a VM's bytes are untrusted) is not held without end: pieces of MAX_LINE_CHARS are passed
   * on as lines; what is left is returned.
   */
  private cut(text: string): string {
    let rest = text
    while (rest.length > MAX_LINE_CHARS) {
      this.onLine(rest.slice(0, MAX_LINE_CHARS))
      rest = rest.slice(MAX_LINE_CHARS)
    }

    return rest
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
