/**
 * The folders above a path that targon trusts, checked as ssh checks those above ~/.ssh, and the files of code that
 * a guard schedules: real folders in a temporary tree, as any user (the other-owner cases need root to chown).
 */
import {execFileSync} from 'node:child_process'
import {chmodSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {OTHER_USER, tempDir} from '../helpers/cli.js'
import {changeableByOthers, ensureConfigDir, unsafeFolderAbove} from '../../src/lib/adapters/state/trust.js'

/** A tree in /tmp (sticky, and the next step down is this user's): `<base>/<name>/config`, `<name>` with `mode`. */
function treeWith(mode: number): {folder: string; config: string} {
  const folder = join(tempDir('targon-trust-'), 'shared')
  mkdirSync(folder)
  chmodSync(folder, mode)
  return {config: join(folder, 'config'), folder}
}

describe('unsafeFolderAbove', () => {
  it('passes folders of this user writable by nobody else, and /tmp (sticky, the next step down is ours)', () => {
    const {config} = treeWith(0o755)
    mkdirSync(config)
    expect(unsafeFolderAbove(config)).toBeUndefined()
    // Missing parts end the walk: whoever creates them is this user.
    expect(unsafeFolderAbove(join(config, 'not', 'yet'))).toBeUndefined()
  })

  it('refuses a folder others can write, unless sticky with the next step down ours', () => {
    for (const mode of [0o777, 0o775, 0o757]) {
      const {folder, config} = treeWith(mode)
      expect(unsafeFolderAbove(config), mode.toString(8)).toEqual({
        dir: folder,
        problem: `is writable by other users (mode ${mode.toString(8)})`,
      })
    }

    const sticky = treeWith(0o1777)
    mkdirSync(sticky.config)
    expect(unsafeFolderAbove(sticky.config)).toBeUndefined()
    expect(unsafeFolderAbove(join(sticky.config, 'deeper'))).toBeUndefined()
  })

  it('walks a path through a link both where the link is and where it leads', () => {
    const {folder} = treeWith(0o777)
    const inside = join(folder, 'real')
    mkdirSync(inside)
    const safe = tempDir('targon-trust-link-')
    symlinkSync(inside, join(safe, 'link'))
    expect(unsafeFolderAbove(join(safe, 'link', 'config'))).toMatchObject({dir: folder})
  })

  it.runIf(process.getuid?.() === 0)("refuses a folder of another user's, sticky or not, and one of theirs inside a sticky one", () => {
    for (const mode of [0o700, 0o1777]) {
      const {folder, config} = treeWith(mode)
      execFileSync('chown', [OTHER_USER, folder])
      expect(unsafeFolderAbove(config)).toMatchObject({
        dir: folder,
        problem: expect.stringMatching(/^belongs to another user \(uid \d+\)$/),
      })
    }

    const sticky = treeWith(0o1777)
    mkdirSync(sticky.config)
    execFileSync('chown', [OTHER_USER, sticky.config])
    // In a sticky folder, the next step down is named: it is theirs to swap.
    expect(unsafeFolderAbove(join(sticky.config, 'deeper'))).toMatchObject({
      dir: sticky.config,
      problem: expect.stringMatching(/^belongs to/),
    })
  })
})

describe('ensureConfigDir', () => {
  it('refuses (CONFIG) a config directory inside a folder others can write, and creates nothing there', () => {
    const {folder, config} = treeWith(0o777)
    expect(() => ensureConfigDir(config)).toThrow(
      expect.objectContaining({
        code: 'CONFIG',
        hint: `run: chmod go-w ${folder} (or chmod +t ${folder}, as /tmp is), or set TARGON_CONFIG_DIR to a directory elsewhere`,
        message: `config directory ${config} is inside ${folder}, which is writable by other users (mode 777)`,
      }),
    )
    expect(() => execFileSync('test', ['-e', config])).toThrow()
    chmodSync(folder, 0o1777)
    expect(ensureConfigDir(config)).toBe(config)
  })
})

describe('changeableByOthers', () => {
  it('finds a file others can write anywhere in a folder, with no sticky exception; links are not followed', () => {
    const pkg = tempDir('targon-trust-pkg-')
    mkdirSync(join(pkg, 'dist', 'deep'), {recursive: true})
    writeFileSync(join(pkg, 'dist', 'deep', 'chunk.cjs'), '')
    symlinkSync('/tmp', join(pkg, 'dist', 'to-tmp'))
    expect(changeableByOthers([pkg])).toBeUndefined()
    chmodSync(join(pkg, 'dist', 'deep', 'chunk.cjs'), 0o646)
    expect(changeableByOthers([pkg])).toEqual({
      dir: join(pkg, 'dist', 'deep', 'chunk.cjs'),
      problem: 'is writable by other users (mode 646)',
    })
    // Not deep: the folder itself only.
    expect(changeableByOthers([pkg], false)).toBeUndefined()
    chmodSync(pkg, 0o1777)
    expect(changeableByOthers([pkg], false)).toMatchObject({dir: pkg})
  })
})
