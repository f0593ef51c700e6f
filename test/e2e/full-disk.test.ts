/**
 * A config directory on a full disk (a real tmpfs mounted small and filled; needs root): the first write fails as a
 * one-line local error that names the file and the fix (exit 3), never as an unexpected error, and leaves no
 * temporary file behind.
 */
import {execFileSync} from 'node:child_process'
import {mkdirSync, readdirSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

const mountPoint = tempDir('targon-full-')
const ctx = useFreshFixture()

afterAll(() => {
  execFileSync('umount', [mountPoint])
})

/** Every file under dir, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
}

describe('a full disk', () => {
  it('fails the first write with a local error naming the file and the fix, and leaves nothing half-written', async () => {
    await ctx.setup()
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', mountPoint])
    const config = join(mountPoint, 'targon')
    mkdirSync(config, {mode: 0o700})
    // Fill it: what is left is too small for anything.
    execFileSync('sh', ['-c', `dd if=/dev/zero of=${join(mountPoint, 'filler')} bs=4k 2>/dev/null || true`])
    const up = await ctx.targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--json'], {config})
    expect(up.code, up.stdout + up.stderr).toBe(3)
    const {error} = parseJson(up)
    expect(error.code).toBe('CONFIG')
    expect(error.message).toMatch(new RegExp(`^cannot write ${config}/\\S+: no space left on the device$`))
    expect(error.hint).toContain(`free space on the device of ${config}`)
    expect(filesUnder(config).filter((file) => file.endsWith('.tmp'))).toEqual([])
    expect(ctx.sim.billing()).toEqual([])
  })
})
