/**
 * What a copy may write at most, in files and bytes, over every tree it copies: the bound of the job store. A copy
 * asks before each file; the file that would pass the bound is not written, and the copy stops there, keeping what it
 * has (each file under its final name is whole, see tree.ts).
 */
import {inBinaryUnits} from '../../core/output.js'

export interface CopyLimit {
  files: number
  bytes: number
}

export class CopyBudget {
  private files = 0
  private bytes = 0

  constructor(readonly limit: CopyLimit) {}

  /** Takes one file of `size` bytes from the budget; null when it fits, else why the copy stops (and nothing is taken). */
  take(size: number): string | null {
    if (this.files + 1 > this.limit.files) return `more than ${this.limit.files} files, the bound of the job store`
    if (this.bytes + size > this.limit.bytes)
      return `more than ${formatBytes(this.limit.bytes)}, the bound of the job store (${formatBytes(this.bytes)} written)`
    this.files++
    this.bytes += size
    return null
  }
}

/** Bytes in the largest binary unit that keeps them at 1 or more, as a size setting is written (10G, 512M). */
export function formatBytes(bytes: number): string {
  const {unit, value} = inBinaryUnits(bytes, ['B', 'K', 'M', 'G', 'T'])
  return `${Number(value.toFixed(1))}${unit}`
}
