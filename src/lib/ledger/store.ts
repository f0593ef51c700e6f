/**
 * The spend ledger's files: `ledger/<org>/YYYY-MM.ndjson` in the config directory, one per org and UTC month (the
 * month a line was written), mode 0600, append only. The ledger outlives the VMs and their local records: it is what
 * `targon cost` and `cost --reconcile` read, long after `down`.
 *
 * Each append is one write(2) on a file opened with O_APPEND: on a local file system the kernel places it at the end
 * as a whole, so a process killed mid-run leaves whole lines, and concurrent `targon` runs never interleave or lose
 * each other's lines. A line that still fails to parse (a full disk) is skipped and counted, never fatal, and the
 * next write starts on a line of its own.
 *
 * Every command that lists VMs tells the ledger, so reading all of it each time would grow with its age (a year of a
 * 20-VM fleet is about 60,000 lines, which took about 0.7 s to read here; bench figure 14 measures what is left).
 * Instead, the first write of a month carries forward what is still open (the start and last sighting of each VM
 * billing, the last pruning). By induction the latest file then holds every open interval: a listing reads it
 * alone, and a report reads from the last file before its range onwards.
 */
import {closeSync, constants, fstatSync, mkdirSync, openSync, readSync, readdirSync, rmSync, writeSync} from 'node:fs'
import {join} from 'node:path'

import {type LedgerLine, LedgerLineSchema} from './lines.js'
import {carriedLines, intervalsOf} from './intervals.js'
import {childPath} from '../state/paths.js'
import {assertOwnDir, readOwnFile} from '../state/trust.js'

export interface LedgerRead {
  lines: LedgerLine[]
  /** Files or lines that could not be read, as warnings. */
  problems: string[]
  /** The latest month deleted by pruning, or null: a report that reaches back to it is incomplete. */
  prunedThrough: string | null
  /** When the ledger's first line was written, or null for an empty ledger. */
  since: number | null
}

const MONTH_FILE = /^(\d{4}-\d{2})\.ndjson$/

export class LedgerStore {
  readonly dir: string
  private readonly root: string

  constructor(
    configDir: string,
    readonly org: string,
  ) {
    this.root = join(configDir, 'ledger')
    this.dir = childPath(this.root, org)
  }

  /**
   * Appends the lines in one write, after what the month carries forward when it is the month's first; a warning when
   * that failed (the run goes on: the ledger must never stop it).
   */
  append(lines: LedgerLine[], now = Date.now()): string | undefined {
    if (lines.length === 0) return undefined
    const path = join(this.dir, `${monthOf(now)}.ndjson`)
    try {
      const carried = this.hasMonth(now) ? [] : this.carry(now)
      const text = [...carried, ...lines].map((line) => `${JSON.stringify(LedgerLineSchema.parse(line))}\n`).join('')
      mkdirSync(this.dir, {mode: 0o700, recursive: true})
      this.checkDirs()
      const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600)
      try {
        const stats = fstatSync(fd)
        if (!stats.isFile() || (stats.mode & 0o077) !== 0 || stats.uid !== process.getuid?.())
          return `the ledger file ${path} is not a private file of this user; nothing was recorded in it`
        // After a torn write (a full disk), the next line must not be glued to the remains of the last.
        const buffer = Buffer.from(endsTorn(fd, stats.size) ? `\n${text}` : text)
        const written = writeSync(fd, buffer)
        if (written !== buffer.length) return `the ledger file ${path} took ${written} of ${buffer.length} bytes (is the disk full?)`
      } finally {
        closeSync(fd)
      }
    } catch (error) {
      return `could not record spend in ${path}: ${(error as Error).message}`
    }

    return undefined
  }

  /** Whether the month of `now` has a file yet. */
  hasMonth(now: number): boolean {
    return this.months().includes(monthOf(now))
  }

  /** What a new month starts with: the open intervals and the last pruning, as the latest file holds them. */
  private carry(now: number): LedgerLine[] {
    const latest = this.readLatest()
    return carriedLines(intervalsOf(latest.lines), latest.prunedThrough, now)
  }

  /** The latest file: every open interval, and all a listing needs (see the header). */
  readLatest(): LedgerRead {
    return this.readMonths(this.months().slice(-1), false)
  }

  /**
   * What a report from `from` needs: the last file of a month before it (which carried what was open when it began)
   * and every file after, since an interval that overlaps the range may have ended, or been found gone, any time
   * later. Without `from`, every file.
   */
  read(from?: number): LedgerRead {
    const months = this.months()
    const before = from === undefined ? undefined : months.filter((month) => month < monthOf(from)).at(-1)
    return this.readMonths(before === undefined ? months : months.filter((month) => month >= before), true)
  }

  /**
   * Deletes whole months that ended more than `retentionDays` before `now`, once a line that says so is written (a
   * report reaching back to them must know it is incomplete); the months deleted, or why none could be.
   */
  prune(retentionDays: number, now = Date.now()): {deleted: string[]; problem?: string} {
    const cutoff = now - retentionDays * 86_400_000
    const old = this.months().filter((month) => monthEnd(month) <= cutoff)
    const through = old.at(-1)
    if (through === undefined) return {deleted: []}
    const problem = this.append([{at: new Date(now).toISOString(), kind: 'pruned', through}], now)
    if (problem) return {deleted: [], problem}
    for (const month of old) rmSync(join(this.dir, `${month}.ndjson`), {force: true})
    return {deleted: old}
  }

  /** The lines of these months; `since`, when asked for, from the first month's first line. */
  private readMonths(wanted: string[], withSince: boolean): LedgerRead {
    const result: LedgerRead = {lines: [], problems: [], prunedThrough: null, since: null}
    try {
      this.checkDirs()
    } catch (error) {
      result.problems.push(`ignoring the ledger: ${(error as Error).message}`)
      return result
    }

    const first = this.months()[0]
    for (const month of wanted) {
      const path = join(this.dir, `${month}.ndjson`)
      let text: string
      try {
        text = readOwnFile(path)
      } catch (error) {
        result.problems.push(`ignoring unreadable ledger file ${path} (${(error as Error).message})`)
        continue
      }

      let bad = 0
      for (const raw of text.split('\n')) {
        if (raw.trim() === '') continue
        const parsed = parseLine(raw)
        if (parsed) result.lines.push(parsed)
        else bad++
      }

      if (bad > 0) result.problems.push(`ignoring ${bad} unreadable line(s) of ${path}`)
    }

    for (const line of result.lines) {
      if (line.kind === 'pruned' && (result.prunedThrough === null || line.through > result.prunedThrough))
        result.prunedThrough = line.through
    }

    if (withSince && first !== undefined) result.since = this.firstWrite(first)
    return result
  }

  /** When the first line of a month's file was written (lines go into a file in the order they are written). */
  private firstWrite(month: string): number | null {
    try {
      const line = parseLine(readOwnFile(join(this.dir, `${month}.ndjson`)).split('\n', 1)[0] ?? '')
      return line ? Date.parse('recorded_at' in line ? line.recorded_at : line.at) : null
    } catch {
      return null
    }
  }

  /** ledger/ and ledger/<org>/: no link, this user's, writable by nobody else. */
  private checkDirs(): void {
    assertOwnDir(this.root, 'ledger directory')
    assertOwnDir(this.dir, 'ledger directory')
  }

  private months(): string[] {
    try {
      return readdirSync(this.dir)
        .map((name) => MONTH_FILE.exec(name)?.[1])
        .filter((month): month is string => month !== undefined)
        .sort()
    } catch {
      return []
    }
  }
}

/** Whether a file of `size` bytes ends without a newline: the remains of a torn write. */
function endsTorn(fd: number, size: number): boolean {
  if (size === 0) return false
  const last = Buffer.alloc(1)
  readSync(fd, last, 0, 1, size - 1)
  return last[0] !== 0x0a
}

function parseLine(raw: string): LedgerLine | undefined {
  try {
    const parsed = LedgerLineSchema.safeParse(JSON.parse(raw))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/** The UTC month of a time, as YYYY-MM. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7)
}

/** When a YYYY-MM month ends (the first instant of the next, UTC). */
export function monthEnd(month: string): number {
  const [year, index] = month.split('-').map(Number) as [number, number]
  return Date.UTC(year, index, 1)
}
