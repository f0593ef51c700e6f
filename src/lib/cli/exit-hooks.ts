/**
 * The stand-in that the bundle gets for `when-exit` and `signal-exit` (scripts/build.mjs maps both here).
 *
 * Both packages hook SIGINT, SIGTERM, SIGHUP and more as soon as they are used: atomically, conf's file writer,
 * loads when-exit with conf, and listr2's cursor handling calls signal-exit. when-exit re-raises the signal after
 * its callbacks, so the CLI counted the first Ctrl-C as its second and exited without clean-up whenever a config
 * file existed. The CLI alone handles signals (interrupt.ts). The callbacks the packages register (remove a
 * half-written temporary file, show the cursor again) are kept here and run only when the CLI exits at once on a
 * second signal; a normal exit needs none of them. test/e2e/signals.test.ts fails if any other listener appears.
 */
type ExitCallback = () => void

// Process-wide by nature: the packages register from wherever they run, and the exit they guard is the process's.
const callbacks = new Set<ExitCallback>()

export function registerExitCallback(callback: ExitCallback): () => void {
  callbacks.add(callback)
  return () => callbacks.delete(callback)
}

/** Runs every registered callback once, ignoring their failures: the process is about to exit. */
export function runExitCallbacks(): void {
  for (const callback of [...callbacks]) {
    callbacks.delete(callback)
    try {
      callback()
    } catch {
      // An exit callback that fails must not stop the others or the exit.
    }
  }
}

/** when-exit's API: its default export registers a callback and returns its disposer. */
export default registerExitCallback

/** signal-exit's API, as restore-cursor uses it. */
export function onExit(callback: (code: number | null, signal: NodeJS.Signals | null) => void): () => void {
  return registerExitCallback(() => callback(null, null))
}
