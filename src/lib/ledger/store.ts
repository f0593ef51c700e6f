/**
 * The spend ledger's files: `ledger/<org>/YYYY-MM.ndjson` in the config directory, one per org and UTC month (the
 * month a line was written), mode 0600, append only. The ledger outlives the VMs and their local records: it is what
 * `targon cost` and `cost --reconcile` read, long after `down`.
 *
 * Each append is one write(2) on a file opened with O_APPEND: the kernel places it at the end as a whole, so a
 * process killed mid-run leaves whole lines, and concurrent `targon` runs never interleave or lose each other's
 * lines. A line that still fails to parse (a full disk) is skipped and counted, never fatal.
 *
 * Every command that lists VMs tells the ledger, so reading all of it each time would grow with its age (a year of a
 * 20-VM fleet is about 60,000 lines and took about 0.7 s to read here). Instead, the first write of a month carries
 * forward what is still open (the start and last sighting of each VM billing, the last pruning): the current month
 * then holds all a listing needs, and a report reads only the months of its range.
 */
import {closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, rmSync, writeSync} from 'node:fs'
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
  /** The earliest month still on disk, or null for an empty ledger. */
  firstMonth: string | null
}

const MONTH_FILE = /^(\d{4}-\d{2})\.ndjson$/

export class LedgerStore {
  readonly dir: string

  constructor(
    configDir: string,
    readonly org: string,
  ) {
    this.dir = childPath(join(configDir, 'ledger'), org)
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
      assertOwnDir(this.dir, 'ledger directory')
      const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600)
      try {
        const stats = fstatSync(fd)
        if (!stats.isFile() || (stats.mode & 0o077) !== 0 || stats.uid !== process.getuid?.())
          return `the ledger file ${path} is not a private file of this user; nothing was recorded in it`
        const buffer = Buffer.from(text)
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

  /** What a new month starts with: the open intervals and the last pruning, as the latest month holds them. */
  private carry(now: number): LedgerLine[] {
    const read = this.read({from: now, to: now})
    return carriedLines(intervalsOf(read.lines), read.prunedThrough, now)
  }

  /**
   * The lines of the months that `range` touches (all months without one), with the first month (where the ledger
   * begins) and the latest (what was carried forward last).
   */
  read(range?: {from: number; to: number}): LedgerRead {
    const result: LedgerRead = {firstMonth: null, lines: [], problems: [], prunedThrough: null}
    const months = this.months()
    result.firstMonth = months[0] ?? null
    const wanted = range
      ? months.filter(
          (month, index) => index === 0 || index === months.length - 1 || (month >= monthOf(range.from) && month <= monthOf(range.to)),
        )
      : months
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

    return result
  }

  /**
   * Deletes whole months that ended more than `retentionDays` before `now`, and records what it deleted; the months
   * deleted.
   */
  prune(retentionDays: number, now = Date.now()): string[] {
    const cutoff = now - retentionDays * 86_400_000
    const old = this.months().filter((month) => monthEnd(month) <= cutoff)
    for (const month of old) rmSync(join(this.dir, `${month}.ndjson`), {force: true})
    const through = old.at(-1)
    if (through) {
      const problem = this.append([{at: new Date(now).toISOString(), kind: 'pruned', through}], now)
      if (problem) throw new Error(problem)
    }

    return old
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
