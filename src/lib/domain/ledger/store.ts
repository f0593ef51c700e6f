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
 * 20-VM fleet with a seen line every 10 minutes was about 60,000 lines, which took about 0.7 s to read here; bench
 * figure 14 measures what a listing pays now). Instead, each month's file comes into being whole with what is still
 * open carried forward (each billing VM's start and last sighting, and its unclear record; the last pruning), and
 * every write goes to the latest file. By induction the latest
 * file then holds every open interval: a listing reads it alone, and a report reads from the last file before its
 * range onwards.
 */
import {randomBytes} from 'node:crypto'
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import {join} from 'node:path'

import {type LedgerLine, LedgerLineSchema} from './lines.js'
import {carriedLines, intervalsOf} from './intervals.js'
import {childPath} from '../../adapters/state/paths.js'
import {assertOwnDir, readOwnFile} from '../../adapters/state/trust.js'

export interface LedgerRead {
  lines: LedgerLine[]
  /** Files or lines that could not be read, as warnings. */
  problems: string[]
  /** The latest month deleted by pruning, or null: a report that reaches back to it is incomplete. */
  prunedThrough: string | null
  /** From when on the ledger is whole: its first line's time, or the end of the pruned months; null when empty. */
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
   * Appends the lines in one write to the latest month's file: that of `now`, or a later one that exists (a run that
   * began just before midnight, or a clock that was ahead once, never writes behind the file listings read). A new
   * month's file is made first, whole, with what it carries forward. A warning when that failed (the run goes on: the
   * ledger must never stop it).
   */
  append(lines: LedgerLine[], now: number): string | undefined {
    if (lines.length === 0) return undefined
    const latest = this.months().at(-1)
    const month = latest !== undefined && latest > monthOf(now) ? latest : monthOf(now)
    const path = join(this.dir, `${month}.ndjson`)
    try {
      mkdirSync(this.dir, {mode: 0o700, recursive: true})
      this.checkDirs()
      if (month !== latest) this.begin(path, lines, now)
      const text = serialized(lines)
      const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW)
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

  /**
   * Makes a new month's file, whole or not at all: what it carries forward (every interval open once the lines about
   * to be written apply, so that one they reopen is carried too) goes into a private temporary file, which link(2)
   * then puts in place; link refuses when another run made the month first, and that one's carry stands.
   */
  private begin(path: string, lines: LedgerLine[], now: number): void {
    const latest = this.readLatest()
    const starting = new Set(lines.flatMap((line) => (line.kind === 'start' ? [line.uid] : [])))
    const text = serialized(
      carriedLines(intervalsOf([...latest.lines, ...lines]), latest.prunedThrough, now).filter(
        (line) => !(line.kind === 'start' && starting.has(line.uid)),
      ),
    )
    const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`
    try {
      writeFileSync(temp, text, {flag: 'wx', mode: 0o600})
      linkSync(temp, path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    } finally {
      rmSync(temp, {force: true})
    }
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
  prune(retentionDays: number, now: number): {deleted: string[]; problem?: string} {
    this.removeStaleTemps(now)
    const cutoff = now - retentionDays * 86_400_000
    const old = this.months().filter((month) => monthEnd(month) <= cutoff)
    const through = old.at(-1)
    if (through === undefined) return {deleted: []}
    const problem = this.append([{at: new Date(now).toISOString(), kind: 'pruned', through}], now)
    if (problem) return {deleted: [], problem}
    const deleted: string[] = []
    for (const month of old) {
      try {
        rmSync(join(this.dir, `${month}.ndjson`), {force: true})
        deleted.push(month)
      } catch (error) {
        return {deleted, problem: `could not delete ${join(this.dir, `${month}.ndjson`)}: ${(error as Error).message}`}
      }
    }

    return {deleted}
  }

  /** Temporary files of new months that a killed run left behind (an hour old: none is still being linked). */
  private removeStaleTemps(now: number): void {
    try {
      for (const name of readdirSync(this.dir).filter((entry) => entry.endsWith('.tmp'))) {
        const path = join(this.dir, name)
        if (now - statSync(path).mtimeMs > 3_600_000) rmSync(path, {force: true})
      }
    } catch {
      // Nothing to tidy, or nothing that may be tidied: the ledger works without.
    }
  }

  /** The lines of these months; `since`, when asked for (see LedgerRead). */
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

    // After pruning, the first file begins with what was carried into it: the ledger is whole from the pruned months on.
    if (withSince && first !== undefined)
      result.since = result.prunedThrough === null ? this.firstWrite(first) : monthEnd(result.prunedThrough)
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

/** Lines as the file holds them: each checked, one JSON object a line. */
function serialized(lines: LedgerLine[]): string {
  return lines.map((line) => `${JSON.stringify(LedgerLineSchema.parse(line))}\n`).join('')
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
