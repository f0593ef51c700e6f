/**
 * Human output: aligned tables on a terminal, tab-separated columns when piped
 * (for cut, awk and sort). JSON output is the base command's job.
 */
export interface Column<Row> {
  header: string
  value: (row: Row) => string
  align?: 'left' | 'right'
}

export function renderTable<Row>(columns: Column<Row>[], rows: Row[], tty = Boolean(process.stdout.isTTY)): string {
  const cells = rows.map((row) => columns.map((column) => oneLine(column.value(row))))
  const headers = columns.map((column) => column.header)
  if (!tty) return [headers, ...cells].map((line) => line.join('\t')).join('\n')
  const widths = headers.map((header, index) => Math.max(header.length, ...cells.map((line) => (line[index] ?? '').length)))
  const format = (line: string[]) =>
    line
      .map((cell, index) => (columns[index]?.align === 'right' ? cell.padStart(widths[index] ?? 0) : cell.padEnd(widths[index] ?? 0)))
      .join('  ')
      .trimEnd()
  return [format(headers), ...cells.map(format)].join('\n')
}

export function dash(value: number | string | null | undefined): string {
  return value === null || value === undefined || value === '' ? '-' : String(value)
}

export function usd(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : value.toFixed(2)
}

/** An amount that may be small (a cost estimate): cents from 1 USD up, hundredths of a cent below. */
export function usdPrecise(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : value.toFixed(Math.abs(value) >= 1 || value === 0 ? 2 : 4)
}

/** MiB as GiB, rounded: 131072 → "128". */
export function gib(mib: number | null): string {
  return mib === null ? '-' : String(Math.round(mib / 1024))
}

/** "1 VM", "2 VMs". */
export function countOf(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}

/**
 * Help text as written in the source: wrapped at the source's width, paragraphs split by a blank line. oclif keeps
 * every newline and wraps each line again to the terminal, which leaves ragged lines; this joins each paragraph
 * into one line for oclif to wrap.
 */
export function prose(text: string): string {
  return text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim().replace(/\s*\n\s*/g, ' '))
    .join('\n\n')
}

/** One line per deletion of a clean-up, for people: what was done to each VM and whether it still bills. */
export function deletionLines(results: readonly {uid: string; name: string | null; action: string; billing: boolean | null}[]): string[] {
  return results.map((result) => {
    const bills = result.billing === false ? 'no longer bills' : result.billing ? 'STILL BILLS' : 'may still bill'
    return `${result.action}: ${result.name ? `${result.name} (${result.uid})` : result.uid}, ${bills}`
  })
}

/**
 * Text from an API answer or a VM, made safe for a person's terminal (and the logs it lands in): control characters
 * other than tab and newline (U+0000-U+001F, U+007F, U+0080-U+009F, on decoded code points) become a visible
 * escape such as \x1b, so that no escape sequence (a window title, a cleared screen, a clipboard write, a forged
 * line) gets through; a CR before an LF is dropped. --json output is never passed through it: it stays exact.
 */
export function printable(text: string): string {
  return text.replaceAll('\r\n', '\n').replace(CONTROL, (char) => {
    const code = char.charCodeAt(0)
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

/**
 * A name from a VM (a file name) on a line of its own or inside one: printable, and a line break or tab in it escaped
 * (\n, \r, \t) rather than kept, so that no name forges a line of output, nor reads as another name.
 */
export function printableName(name: string): string {
  return printable(name.replace(/[\n\r\t]/g, (char) => LINE_ESCAPES[char] ?? char))
}

const LINE_ESCAPES: Record<string, string> = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}

/** Text from outside for one line or one table cell: printable, and a tab or line break becomes a space. */
export function oneLine(text: string): string {
  return printable(text).replace(/[\t\n]/g, ' ')
}

// Bidirectional overrides and isolates too: they reorder what a terminal shows (a name that reads as another).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

/**
 * Whether stderr can show a live tree: a terminal that moves the cursor (not TERM=dumb) and has a width (a
 * pseudo-terminal without a size has 0 columns, where each character would get its own line). Otherwise, and
 * in CI, plain lines.
 */
export function liveTerminal(): boolean {
  return Boolean(process.stderr.isTTY) && !process.env.CI && process.env.TERM !== 'dumb' && (process.stderr.columns ?? 0) > 0
}

/** Bytes in the largest of `units` (each 1024 times the one before, the first bytes) that keeps them at 1 or more. */
export function inBinaryUnits(bytes: number, units: readonly string[]): {value: number; unit: string; scaled: boolean} {
  let value = bytes
  let index = 0
  while (value >= 1024 && index < units.length - 1) {
    value /= 1024
    index++
  }

  return {scaled: index > 0, unit: units[index] as string, value}
}
