/** What `targon cp` prints per VM, from that VM's result: its line, the files not copied, and the entries skipped. */
import {printableName} from '../../core/output.js'
import {size} from '../../workflows/copy/index.js'
import type {CopyVmResult} from '../../workflows/copy/schema.js'

/** The VM's line on stdout: what was copied where, or that it failed and why. */
export function copyResultLine(result: CopyVmResult): string {
  const done = result.direction === 'upload' ? 'uploaded' : 'downloaded'
  const summary = `${result.files} of ${result.planned_files} files (${size(result.bytes)}) in ${(result.duration_ms / 1000).toFixed(1)} s`
  return result.ok ? `${result.vm}: ${done} ${summary} to ${result.destination}` : `${result.vm}: FAILED, ${summary}: ${result.error}`
}

/** A line on stderr per file not copied. */
export function copyFailedLines(result: CopyVmResult): string[] {
  return result.failed.map((failed) => printableName(`${result.vm} | not copied: ${failed.path}: ${failed.error}`))
}

/** A warning per entry skipped (a link or special file). */
export function copySkippedWarnings(result: CopyVmResult): string[] {
  return result.skipped.map((skipped) => `${result.vm}: skipped ${printableName(skipped.path)}: ${skipped.reason}`)
}
