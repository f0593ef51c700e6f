/**
 * What a sync holds back whatever the ignore files say: targon's config directory and ~/.ssh never (by identity,
 * wherever and under whatever name they lie in the tree), and what looks like a private key or credentials unless a
 * .targonignore negation lets it through; and the refusals of `targon run`'s working directory.
 */
import {chmodSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {isTargonError} from '../../src/lib/core/errors.js'
import {looksSecret, neverSentDirs, refuseInsideNeverSent} from '../../src/lib/workflows/sync/held-back.js'
import {walkLocal} from '../../src/lib/workflows/sync/walk.js'
import {checkWorkdir} from '../../src/lib/workflows/job/workdir.js'
import {tempDir} from '../helpers/cli.js'

function write(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), {recursive: true})
    writeFileSync(join(root, path), content)
  }
}

/** A home as targon finds it: its config directory with the keys, ~/.ssh, secrets beside an ordinary file. */
function home(): string {
  const root = tempDir('targon-home-tree-')
  write(root, {
    '.config/targon-fleet/config.json': '{"api-key":"sk-secret"}',
    '.config/targon-fleet/keys/id_ed25519': 'PRIVATE',
    '.config/targon-fleet/keys/id_ed25519.pub': 'ssh-ed25519 AAAA',
    '.env': 'TOKEN=1',
    '.ssh/id_ed25519': 'PRIVATE',
    '.ssh/config': 'Host x',
    'notes.txt': 'ordinary',
    'x.pem': 'PEM',
  })
  return root
}

let savedHome: string | undefined
beforeEach(() => (savedHome = process.env.HOME))
afterEach(() => {
  process.env.HOME = savedHome
})

async function walked(root: string, configDirs: string[]) {
  const tree = await walkLocal(root, {neverSent: neverSentDirs(configDirs)})
  return {held: Object.fromEntries(tree.heldBack.map((each) => [each.path, each.kind])), sent: tree.files.map((file) => file.rel)}
}

describe('what looks secret', () => {
  it.each([
    ['id_ed25519', 'an SSH private key'],
    ['keys/id_rsa', 'an SSH private key'],
    ['id_work', 'an SSH private key'],
    ['certs/server.pem', '*.pem'],
    ['.netrc', '.netrc'],
    ['.aws', '.aws/'],
    ['.docker/config.json', '.docker/config.json'],
    ['deep/.docker/config.json', '.docker/config.json'],
    ['.git-credentials', '.git-credentials'],
    ['.env', '.env*'],
    ['app/.env.local', '.env*'],
    ['.envrc', '.env*'],
  ])('%s is held back as %s, with the line that sends it', (rel, what) => {
    const reason = looksSecret(rel)
    expect(reason).toContain(what)
    expect(reason).toContain(`a .targonignore line !${rel} sends it`)
  })

  it.each(['id_ed25519.pub', 'keys/id_rsa.pub', 'config.json', 'docker/config.json', 'env', 'my.env', 'pem', 'identity.txt', 'aws'])(
    '%s goes',
    (rel) => expect(looksSecret(rel)).toBeNull(),
  )
})

describe('the walk holds back', () => {
  it("targon's config directory and ~/.ssh, and what looks secret; only the ordinary file goes", async () => {
    const root = home()
    process.env.HOME = root
    const {held, sent} = await walked(root, [join(root, '.config', 'targon-fleet')])
    expect(sent).toEqual(['notes.txt'])
    expect(held).toEqual({
      '.config/targon-fleet': 'config-directory',
      '.env': 'looks-secret',
      '.ssh': 'ssh-directory',
      'x.pem': 'looks-secret',
    })
  })

  it('lets a .targonignore negation send what looks secret, but nothing sends the config directory, its keys or ~/.ssh', async () => {
    const root = home()
    process.env.HOME = root
    write(root, {
      '.gitignore': '!x.pem\n',
      '.targonignore': '!.env\n!.config/\n!.config/targon-fleet/\n!.ssh/\n!id_*\n!keys/\n!config.json\n',
    })
    const {held, sent} = await walked(root, [join(root, '.config', 'targon-fleet')])
    // .gitignore's negation does not count: only .targonignore lets a secret through on purpose.
    expect(sent).toEqual(['.env', '.gitignore', '.targonignore', 'notes.txt'])
    expect(held).toEqual({'.config/targon-fleet': 'config-directory', '.ssh': 'ssh-directory', 'x.pem': 'looks-secret'})
  })

  it('lets through only where the last .targonignore rule that matches is a negation', async () => {
    const root = tempDir('targon-walk-')
    write(root, {
      '.env': 'A=1',
      '.targonignore': '!.env\n',
      'a/.env': 'B=2',
      'a/.targonignore': '.env\n',
      'a/b/.env': 'C=3',
      'a/b/.gitignore': '!.env\n',
    })
    const {held, sent} = await walked(root, [])
    // a/.env is ignored (no word about it); a/b/.env is kept by a .gitignore, which cannot send a secret.
    expect(sent).toEqual(['.env', '.targonignore', 'a/.targonignore', 'a/b/.gitignore'])
    expect(held).toEqual({'a/b/.env': 'looks-secret'})
  })

  it('the config directory wherever it lies and whatever it is called (found through a link to it)', async () => {
    const root = tempDir('targon-walk-')
    write(root, {'tools/state/config.json': '{}', 'tools/state/keys/id_ed25519': 'PRIVATE', 'main.py': 'x'})
    write(root, {'.targonignore': '!id_*\n'})
    const link = join(tempDir('targon-link-'), 'config')
    symlinkSync(join(root, 'tools', 'state'), link)
    const {held, sent} = await walked(root, [link])
    expect(sent).toEqual(['.targonignore', 'main.py'])
    expect(held).toEqual({'tools/state': 'config-directory'})
  })

  it('nothing of a working directory that is, or lies in, the config directory or ~/.ssh', async () => {
    const root = home()
    process.env.HOME = root
    const dirs = neverSentDirs([join(root, '.config', 'targon-fleet')])
    for (const inside of [join(root, '.config', 'targon-fleet'), join(root, '.config', 'targon-fleet', 'keys'), join(root, '.ssh')]) {
      expect(() => refuseInsideNeverSent(inside, dirs)).toThrow(/which a sync never sends/)
      await expect(walkLocal(inside, {neverSent: dirs})).rejects.toMatchObject({code: 'USAGE'})
    }
    expect(() => refuseInsideNeverSent(root, dirs)).not.toThrow()
  })
})

describe("run's working directory", () => {
  it('is refused when it is $HOME and --workdir did not name it, saying what would be sent', async () => {
    const root = home()
    process.env.HOME = root
    chmodSync(root, 0o700)
    const dirs = neverSentDirs([join(root, '.config', 'targon-fleet')])
    const refusal = await checkWorkdir(root, false, dirs).catch((error: unknown) => error)
    expect(isTargonError(refusal) && refusal.code).toBe('USAGE')
    expect((refusal as Error).message).toBe(`the working directory is your home directory ${root}: run would send 1 file (8B) to the VM`)
    expect((refusal as {hint: string}).hint).toContain(`--workdir ${root}`)
    await expect(checkWorkdir(root, true, dirs)).resolves.toBeUndefined()
    await expect(checkWorkdir(join(root, '.config'), false, dirs)).resolves.toBeUndefined()
    await expect(checkWorkdir(join(root, '.config', 'targon-fleet'), true, dirs)).rejects.toMatchObject({code: 'USAGE'})
  })

  it('is refused when it is / and --workdir did not name it', async () => {
    await expect(checkWorkdir('/', false, [])).rejects.toMatchObject({
      code: 'USAGE',
      message: expect.stringMatching(/^the working directory is the root directory \/: run would send /),
    })
  })
})
