/**
 * Parsers for user-supplied values. Each throws a usage error that names the flag,
 * the value and a valid example.
 */
import {usageError} from './errors.js'

/** A price in USD per hour for the whole VM (or, as `what` says, another amount in USD): a positive decimal such as 1.8. */
/** A job's id, j-20261202-030527-a1b2c3: sortable by start, unique enough per VM, and safe as a file name and a unit name. */
export const JOB_ID_PATTERN = /^j-\d{8}-\d{6}-[0-9a-f]{6}$/

export function parsePrice(input: string, flag = '--max-price', what = 'USD per hour for the whole VM'): number {
  const text = input.trim().replace(/^\$/, '')
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(text) || Number(text) <= 0 || !Number.isFinite(Number(text))) {
    throw usageError(`${flag} "${input}" is not a price`, `give ${what}, e.g. ${flag} 1.8`)
  }

  return Number(text)
}

const UNIT_MS: Record<string, number> = {d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000}
const MINUTE = 60_000
const MAX_DURATION_MS = 365 * 86_400_000

/** Each duration flag's range, stated in its error message. */
export const DURATION_LIMITS = {
  '--idle': {max: MAX_DURATION_MS, min: 1000},
  '--idle-limit': {max: MAX_DURATION_MS, min: 1000},
  '--hook-timeout': {max: 86_400_000, min: 1000},
  '--min-runway': {max: MAX_DURATION_MS, min: MINUTE},
  '--older-than': {max: MAX_DURATION_MS, min: MINUTE},
  '--since': {max: 10 * MAX_DURATION_MS, min: MINUTE},
  '--timeout': {max: MAX_DURATION_MS, min: 1000},
  '--ttl': {max: MAX_DURATION_MS, min: MINUTE},
  '--default-ttl': {max: MAX_DURATION_MS, min: MINUTE},
  '--every': {max: 86_400_000, min: MINUTE},
  '--by': {max: MAX_DURATION_MS, min: MINUTE},
  '--warn': {max: 86_400_000, min: MINUTE},
  '--wait': {max: MAX_DURATION_MS, min: 1000},
} as const
export type DurationFlag = keyof typeof DURATION_LIMITS

/** A duration with units: 90s, 20m, 6h, 1d or 1h30m, within the flag's range. A bare number has no unit and is refused. */
export function parseDuration(input: string, flag: DurationFlag): number {
  const {max, min} = DURATION_LIMITS[flag]
  const range = `from ${formatDuration(min)} to ${formatDuration(max)}`
  const text = input.trim().toLowerCase()
  if (!/^(\d+(\.\d+)?[smhd])+$/.test(text)) {
    const problem = /^\d+(\.\d+)?$/.test(text) ? 'has no unit' : 'is not a duration'
    throw usageError(`${flag} "${input}" ${problem}`, `use a number with a unit s, m, h or d, ${range}, e.g. ${flag} 6h or ${flag} 1h30m`)
  }

  let total = 0
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)([smhd])/g)) total += Number(amount) * (UNIT_MS[unit as string] as number)
  const ms = Math.round(total)
  if (ms < min || ms > max) throw usageError(`${flag} "${input}" is out of range`, `use ${range}, e.g. ${flag} 6h`)
  return ms
}

/** 3723000 → "1h2m"; short and stable for tables. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return minutes % 60 ? `${hours}h${minutes % 60}m` : `${hours}h`
  return `${Math.floor(hours / 24)}d${hours % 24 ? `${hours % 24}h` : ''}`
}

/**
 * A point in time for a report bound: a UTC date (2026-11-01) or an RFC 3339 time with its offset. A date given as an
 * end (`end`) means the end of that day, so that --to 2026-11-30 includes the 30th.
 */
export function parseTime(input: string, flag: string, end = false): number {
  const text = input.trim()
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  const ms = date
    ? Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]) + (end ? 1 : 0))
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(text)
      ? Date.parse(text)
      : Number.NaN
  if (Number.isNaN(ms) || (date && new Date(ms - (end ? 86_400_000 : 0)).toISOString().slice(0, 10) !== text))
    throw usageError(
      `${flag} "${input}" is not a date or time`,
      `use a UTC date or an RFC 3339 time, e.g. ${flag} 2026-11-01 or ${flag} 2026-11-01T09:00:00Z`,
    )
  return ms
}

const SIZE_UNITS: Record<string, number> = {'': 1, g: 1024 ** 3, k: 1024, m: 1024 ** 2, t: 1024 ** 4}

/** A size in bytes with a binary unit: 500M, 10G, 1.5T (K, M, G, T are 1024-based; a trailing B or iB is allowed). */
export function parseSize(input: string, source: string, range: {min: number; max: number}): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/.exec(input.trim().toLowerCase())
  const bytes = match ? Math.round(Number(match[1]) * (SIZE_UNITS[match[2] as string] as number)) : Number.NaN
  if (!(bytes >= range.min && bytes <= range.max))
    throw usageError(
      `${source} "${input}" is not a size from ${range.min / 1024 ** 2}M to ${range.max / 1024 ** 4}T`,
      'use e.g. 500M or 20G',
    )
  return bytes
}
