/**
 * The spend ledger's files: `ledger/<org>/YYYY-MM.ndjson` in the config directory, one per org and UTC month (the
 * month a line was written), mode 0600, append only. The ledger outlives the VMs and their local records: it is what
 * `targon cost` and `cost --reconcile` read, long after `down`.
 *
 * Each append is one write(2) on a file opened with O_APPEND: the kernel places it at the end as a whole, so a
 * process killed mid-run leaves whole lines, and concurrent `targon` runs never interleave or lose each other's
 * lines. A line that still fails to parse (a full disk) is skipped and counted, never fatal.
 */
import {closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, rmSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import * as z from 'zod'

import {START_SOURCES, STOP_HOWS, VmFactsSchema} from '../contract.js'
import {childPath} from '../state/paths.js'
import {assertOwnDir, readOwnFile} from '../state/trust.js'

const time = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'is not a time')

export const LedgerLineSchema = z.discriminatedUnion('kind', [
  /** Billing began at `at`. */
  VmFactsSchema.extend({kind: z.literal('start'), uid: z.string(), at: time, source: z.enum(START_SOURCES), recorded_at: time}),
  /** Seen billing at `at` (throttled; see SEEN_EVERY_MS in intervals.ts). */
  z.object({kind: z.literal('seen'), uid: z.string(), at: time}),
  /** Billing ended at `at`, as found at `recorded_at` (for `last-seen`, the end lies between the two). */
  z.object({kind: z.literal('stop'), uid: z.string(), at: time, how: z.enum(STOP_HOWS), recorded_at: time}),
  /** The org's credits as GET credits answered at `at`. */
  z.object({kind: z.literal('credits'), at: time, credits: z.number(), currency: z.string().nullable()}),
  /** Months up to `through` (YYYY-MM) were deleted as older than the retention. */
  z.object({kind: z.literal('pruned'), at: time, through: z.string().regex(/^\d{4}-\d{2}$/)}),
])
export type LedgerLine = z.infer<typeof LedgerLineSchema>

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

  /** Appends the lines in one write; a warning when that failed (the run goes on: the ledger must never stop it). */
  append(lines: LedgerLine[], now = Date.now()): string | undefined {
    if (lines.length === 0) return undefined
    const text = lines.map((line) => `${JSON.stringify(LedgerLineSchema.parse(line))}\n`).join('')
    const path = join(this.dir, `${monthOf(now)}.ndjson`)
    try {
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

  read(): LedgerRead {
    const result: LedgerRead = {firstMonth: null, lines: [], problems: [], prunedThrough: null}
    const months = this.months()
    result.firstMonth = months[0] ?? null
    for (const month of months) {
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
    if (through) this.append([{at: new Date(now).toISOString(), kind: 'pruned', through}], now)
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
