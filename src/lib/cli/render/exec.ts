/** What `targon exec` prints besides the VMs' own lines: why the command failed on each VM where it did. */
import {printable} from '../../core/output.js'
import type {ExecResult} from '../../workflows/exec/schema.js'

/** One line per VM where the command failed or could not run, with why (--json has it in the results). */
export function execFailureLines(result: ExecResult): string[] {
  return result.results
    .filter((vm) => vm.exit_code !== 0)
    .map((vm) => {
      const why = vm.exit_code === null ? (vm.error ?? 'did not run') : `exit code ${vm.exit_code}${vm.error ? ` (${vm.error})` : ''}`
      return printable(`${vm.name}: ${why}`)
    })
}
