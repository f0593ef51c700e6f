/** Shell completion as bash runs it: `targon <TAB>` offers each command and topic once. */
import {execFileSync} from 'node:child_process'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {runCli, tempDir} from '../helpers/cli.js'

describe('bash completion', () => {
  it('offers the config topic once, not once per config command', async () => {
    const cache = tempDir('targon-cache-')
    const setup = await runCli(['autocomplete', 'bash'], {env: {XDG_CACHE_HOME: cache}})
    expect(setup.code, setup.stderr).toBe(0)
    const script = join(cache, 'targon-fleet', 'autocomplete', 'functions', 'bash', 'targon.bash')
    const complete = (line: string) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source "$0"; COMP_LINE="${line}"; read -ra COMP_WORDS <<< "$COMP_LINE "; COMP_WORDS+=(""); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); $(complete -p targon | sed -E 's/.* -F ([^ ]+) .*/\\1/'); printf '%s\\n' "\${COMPREPLY[@]}"`,
          script,
        ],
        {encoding: 'utf8'},
      )
        .trim()
        .split('\n')
    const top = complete('targon')
    expect(top.filter((word) => word === 'config')).toEqual(['config'])
    expect(top).toEqual(expect.arrayContaining(['up', 'down', 'status', 'ssh', 'exec', 'cp', 'logs', 'offers']))
    expect(complete('targon config')).toEqual(expect.arrayContaining(['get', 'list', 'set', 'unset']))
  })
})
