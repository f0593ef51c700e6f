/**
 * What a fetch may write at most, in files and bytes, over every tree it copies: the bound of every fetch of a job's
 * outputs (run --out, jobs fetch, jobs wait, the job store), and the free space of the local disk. A copy asks before
 * each file; the file that would pass the bound, or not fit on the disk, is not written, and the copy stops there,
 * keeping what it has (each file under its final name is whole, see tree.ts). A file is taken at its listed size,
 * which is also the most its copy reads (a sparse file counts at its full length), and given back if it does not arrive.
 */
import {statfs} from 'node:fs/promises'

import {inBinaryUnits} from '../../core/output.js'

export interface CopyLimit {
  files: number
  bytes: number
}

/** Bytes of the filesystem that holds `dir` free for an unprivileged writer. */
export type FreeSpace = (dir: string) => Promise<number>

/** What a fetch leaves free on the local disk: a full disk would break the config directory's own writes. */
export const FREE_RESERVE = 64 * 1024 ** 2

export async function freeSpace(dir: string): Promise<number> {
  const stats = await statfs(dir)
  return stats.bavail * stats.bsize
}

export class CopyBudget {
  private files = 0
  private bytes = 0

  /** `free`: how the free space is read (statfs; a test's own); a disk it cannot read is not checked. */
  constructor(
    readonly limit: CopyLimit,
    private readonly free: FreeSpace = freeSpace,
  ) {}

  /**
   * Takes one file of `size` bytes, to be written into `dir`: null when it fits, else why the fetch stops there, with
   * what arrived and how to go further (nothing is taken).
   */
  async take(size: number, dir: string): Promise<string | null> {
    const arrived = `${formatBytes(this.bytes)} in ${this.files} ${this.files === 1 ? 'file' : 'files'} arrived`
    if (this.files + 1 > this.limit.files) return `the fetch stopped at its bound of ${this.limit.files} files (${arrived})`
    if (this.bytes + size > this.limit.bytes)
      return `the fetch stopped at its bound of ${formatBytes(this.limit.bytes)}, the job-store-limit setting (${arrived}; the next file has ${formatBytes(size)}); raise it with targon config set job-store-limit SIZE`
    const free = await this.free(dir).catch(() => Number.POSITIVE_INFINITY)
    if (size + FREE_RESERVE > free)
      return `the fetch stopped: the local disk of ${dir} has ${formatBytes(free)} free, too little for the next file (${formatBytes(size)}) and ${formatBytes(FREE_RESERVE)} to spare (${arrived}); free some space and fetch again`
    this.files++
    this.bytes += size
    return null
  }

  /** A taken file that did not arrive (its copy failed, nothing of it kept): the budget counts what arrived. */
  giveBack(size: number): void {
    this.files--
    this.bytes -= size
  }
}

/** Bytes in the largest binary unit that keeps them at 1 or more, as a size setting is written (10G, 512M). */
export function formatBytes(bytes: number): string {
  const {unit, value} = inBinaryUnits(bytes, ['B', 'K', 'M', 'G', 'T'])
  return `${Number(value.toFixed(1))}${unit}`
}
