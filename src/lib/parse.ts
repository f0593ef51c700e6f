/**
 * Parsers for user-supplied values. Each throws a usage error that names the flag,
 * the value and a valid example.
 */
import {usageError} from './errors.js'

/** Integer micro-dollars: prices are compared in these to avoid float surprises. */
export function toMicros(usd: number): number {
  return Math.round(usd * 1_000_000)
}

export function withinCap(price: number, cap: number): boolean {
  return toMicros(price) <= toMicros(cap)
}

/** A price in USD per hour for the whole VM: a positive decimal such as 1.8. */
export function parsePrice(input: string, flag = '--max-price'): number {
  const text = input.trim().replace(/^\$/, '')
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(text) || Number(text) <= 0 || !Number.isFinite(Number(text))) {
    throw usageError(`${flag} "${input}" is not a price`, `give USD per hour for the whole VM, e.g. ${flag} 1.8`)
  }

  return Number(text)
}

const UNIT_MS: Record<string, number> = {d: 86_400_000, h: 3_600_000, m: 60_000, ms: 1, s: 1000}
const MAX_DURATION_MS = 366 * 86_400_000

/** A duration such as 90s, 20m, 6h, 1d or 1h30m; a bare number means seconds. */
export function parseDuration(input: string, flag: string): number {
  const text = input.trim().toLowerCase()
  const fail = () => usageError(`${flag} "${input}" is not a duration`, `use a number with a unit s, m, h or d, e.g. ${flag} 6h or ${flag} 1h30m`)
  if (/^\d+$/.test(text)) return checkRange(Number(text) * 1000, fail)
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(text)) throw fail()
  let total = 0
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) {
    total += Number(amount) * (UNIT_MS[unit as string] as number)
  }

  return checkRange(Math.round(total), fail)
}

function checkRange(ms: number, fail: () => Error): number {
  if (!(ms > 0) || ms > MAX_DURATION_MS) throw fail()
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
