/**
 * The progress bar of `targon cp`: one line on stderr, redrawn in place, summing every VM's files and bytes.
 * Only on a live terminal (see liveTerminal); elsewhere the per-VM result lines say it all.
 */
import type {Clock} from '../../core/clock.js'
import {inBinaryUnits, liveTerminal} from '../../core/output.js'
import type {TreeProgress} from './tree.js'

const REDRAW_MS = 100
const BAR_WIDTH = 24

export class CopyBar {
  private readonly vms = new Map<string, TreeProgress>()
  private done = 0
  private last = 0
  private shown = false

  constructor(
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** A bar when stderr is a live terminal and the run is not silent; otherwise undefined. */
  static forTerminal(vmCount: number, silent: boolean, clock: Pick<Clock, 'now'>): CopyBar | undefined {
    return silent || !liveTerminal() ? undefined : new CopyBar(vmCount, process.stderr, clock)
  }

  update(vm: string, progress: TreeProgress): void {
    this.vms.set(vm, {...progress})
    if (this.clock.now() - this.last >= REDRAW_MS) this.draw()
  }

  finish(_vm: string): void {
    this.done++
    this.draw()
  }

  /** Erases the bar, e.g. before a result line is printed. */
  clear(): void {
    if (this.shown) this.stream.write('\r\u001B[2K')
    this.shown = false
  }

  private draw(): void {
    this.last = this.clock.now()
    const sum = {bytes: 0, files: 0, totalBytes: 0, totalFiles: 0}
    for (const each of this.vms.values()) {
      sum.bytes += each.bytes
      sum.files += each.files
      sum.totalBytes += each.totalBytes
      sum.totalFiles += each.totalFiles
    }

    const ratio = sum.totalBytes > 0 ? Math.min(1, sum.bytes / sum.totalBytes) : sum.totalFiles > 0 ? sum.files / sum.totalFiles : 0
    const filled = Math.round(ratio * BAR_WIDTH)
    const vms = this.total > 1 ? `  ${this.done}/${this.total} VMs` : ''
    const line = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${sum.files}/${sum.totalFiles} files  ${size(sum.bytes)}/${size(sum.totalBytes)}${vms}`
    this.stream.write(`\r\u001B[2K${line.slice(0, Math.max(10, (this.stream.columns ?? 80) - 1))}`)
    this.shown = true
  }
}

/** 1536 → "1.5 KiB". */
export function size(bytes: number): string {
  const {scaled, unit, value} = inBinaryUnits(bytes, ['B', 'KiB', 'MiB', 'GiB', 'TiB'])
  return scaled ? `${value.toFixed(1)} ${unit}` : `${value} B`
}
