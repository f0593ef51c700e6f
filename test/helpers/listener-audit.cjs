// Preloaded into the CLI by test/e2e/signals.test.ts (node --require): records every listener added to the process
// for a signal or for exit, by its function name, one JSON line each in the file $TARGON_LISTENER_AUDIT.
const {appendFileSync} = require('node:fs')

const file = process.env.TARGON_LISTENER_AUDIT
const watched = (event) => typeof event === 'string' && (/^SIG[A-Z0-9]+$/.test(event) || event === 'exit' || event === 'beforeExit')
let depth = 0 // once() adds its wrapper through on(): only the outermost call is recorded
for (const method of ['on', 'once', 'addListener', 'prependListener', 'prependOnceListener']) {
  const original = process[method]
  process[method] = function (event, listener, ...rest) {
    if (file && depth === 0 && watched(event)) appendFileSync(file, `${JSON.stringify({event, method, name: listener?.name ?? ''})}\n`)
    depth++
    try {
      return original.call(this, event, listener, ...rest)
    } finally {
      depth--
    }
  }
}
