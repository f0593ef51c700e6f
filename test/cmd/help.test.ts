/** Every command's --help: the subprocess start-up test (test/e2e/startup.test.ts) samples a few, cold and cached. */
import {describe, expect, it} from 'vitest'

import {COMMANDS} from '../../src/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const ids = Object.keys(COMMANDS)
/**
 * The subcommands of a topic that is itself a command (`jobs`): run in process, oclif's help answers "Command
 * jobs:cancel not found" for them (the built CLI finds them), so they run as a process.
 */
const underACommand = (id: string) => id.includes(':') && ids.includes(id.split(':')[0] as string)

describe('--help', () => {
  it.each(ids.map((id) => ({id, line: id.replaceAll(':', ' ')})))('targon $line --help prints its usage', async ({id}) => {
    await ctx.setup()
    const help = await ctx.targon([...id.split(':'), '--help'], {inProcess: !underACommand(id)})
    expect(help.stderr).toBe('')
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('USAGE')
    expect(help.stdout).toContain(`$ targon ${id.replaceAll(':', ' ')}`)
  })
})
