/**
 * Vitest global setup: the simulated VMs (test/vm) need root and the tools of scripts/prerequisites.sh.
 * Without them the run stops here, once, with one line saying what is missing, rather than failing
 * file by file; a test that needs them is never skipped.
 */
import {spawnSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const SCRIPT = fileURLToPath(new URL('../../scripts/prerequisites.sh', import.meta.url))

export default function checkPrerequisites(): void {
  if (process.getuid?.() !== 0)
    stop('the tests need root: the simulated VMs use namespaces and overlay mounts; run npm test as root, as CI does')
  const check = spawnSync('bash', [SCRIPT, '--check'], {encoding: 'utf8'})
  if (check.status !== 0) stop(check.stderr.trim() || `${SCRIPT} --check exited ${check.status}`)
}

// Exits rather than throws: vitest would print a thrown error under "No test files found" and a stack.
function stop(line: string): never {
  process.stderr.write(`${line}\n`)
  process.exit(1)
}
