/**
 * A crontab command of the test's own, first on PATH: it keeps "this user's crontab" in a file of a temporary
 * directory, as the real one does (-l, -r, and - to replace it), so that the real crontab is never touched and no
 * root is needed. The real crontab is exercised in test/e2e/guard.test.ts.
 */
import {chmodSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {tempDir} from './cli.js'

/** The PATH that finds it, and the file that holds the crontab. */
export function fakeCrontab(): {path: string; file: string} {
  const bin = tempDir('targon-crontab-')
  const file = join(bin, 'crontab.txt')
  writeFileSync(
    join(bin, 'crontab'),
    `#!/bin/sh\ncase "$1" in\n-l) if [ -f ${file} ]; then cat ${file}; else echo "no crontab for $(id -un)" >&2; exit 1; fi ;;\n-r) rm -f ${file} ;;\n-) cat > ${file} ;;\nesac\n`,
  )
  chmodSync(join(bin, 'crontab'), 0o755)
  return {file, path: `${bin}:${process.env.PATH}`}
}
