/**
 * The sync's ignore rules held to git itself: generated trees of ignore files over one set of tricky names, each
 * walked by walkLocal and asked of `git check-ignore` in a scratch repository (no global excludes, nothing tracked).
 * For the oracle each directory's `.targonignore` is appended to its `.gitignore`, which is what the rules say it is.
 */
import {execFileSync} from 'node:child_process'
import {mkdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {isIgnored, parseIgnoreFile} from '../../src/lib/workflows/sync/ignore.js'
import {walkLocal} from '../../src/lib/workflows/sync/walk.js'
import {tempDir} from '../helpers/cli.js'

/** The files of every generated tree; directories follow from them. */
const FILES = [
  'a.log',
  'debug.log',
  'keep.log',
  '#hash',
  '!bang',
  'trail ',
  'README.md',
  'abc',
  'abd',
  'a[b]',
  'a-b',
  'build/out.o',
  'build/keep.txt',
  'build/sub/x.o',
  'src/main.c',
  'src/build/gen.c',
  'src/lib/util.c',
  'src/lib/util.h',
  'src/test/a.test.c',
  'doc/a/b/c.md',
  'doc/a/readme.txt',
  'deep/x/y/z.txt',
  'deep/x/y/keep.txt',
  'deep/x/z.txt',
  'logs/today.log',
  'logs/sub/old.log',
  'data/file',
  'data/dir/file',
  'Zed/UPPER.TXT',
]

/** Lines to draw from: wildcards, anchors, directory-only, negations, escapes, trailing spaces, comments, CRLF ends. */
const LINES = [
  '*.log',
  '!keep.log',
  '/a.log',
  'build/',
  'build',
  '/build/',
  '!build/keep.txt',
  '!build/',
  '**/build',
  'src/**/*.c',
  '**/*.h',
  'doc/**',
  '!doc/a/readme.txt',
  'deep/**/z.txt',
  '\\#hash',
  '#hash',
  '\\!bang',
  '!bang',
  'trail\\ ',
  'trail ',
  'trail',
  '*.c   ',
  '*.c\\ ',
  'data/*',
  '!data/dir',
  '!data/dir/',
  '/src/lib',
  'lib/',
  '*.[ch]',
  'a[bc]?',
  'ab[!c]',
  'ab[^d]',
  'a\\[b\\]',
  'a[[]b]',
  '[a-c]bc',
  '[c-a]bc',
  '[[:alpha:]]bc',
  '[[:digit:]]*',
  '[[:nope:]]bc',
  'a[-]b',
  'ab[',
  '*.test.*',
  'logs/*.log',
  'logs/**/*.log',
  '**/sub',
  'deep/*/y',
  'deep/**',
  '!deep/x/y/keep.txt',
  '!deep/x/y/',
  '*',
  '!*.md',
  '!*/',
  'y/',
  '/deep/x/y/',
  '**',
  'a/**/c.md',
  'doc/**/c.md',
  'doc/**/b',
  '!src/',
  'src/*',
  '**/x/**',
  '***/z.txt',
  'x***',
  'zed/',
  'Zed/*.TXT',
  '?.log',
  '??????.log',
  'b*d',
  '/',
  '!',
  '\\',
  'foo\\',
  '',
  '   ',
  '# a comment',
  'README.md/',
  '*/today.log',
  '/*/*.c',
  'main.c',
  '/main.c',
  'keep.log\r',
  '!*.md\r',
  'trail \r',
]

/** Directories that get ignore files. */
const HOMES = ['', 'src', 'deep/x', 'build', 'doc/a', 'logs']

/** A small deterministic generator, so that a failure names a case that can be run again. */
function generator(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state / 2 ** 32
  }
}

interface Case {
  gitignore: Record<string, string>
  targonignore: Record<string, string>
}

function generate(seed: number): Case {
  const random = generator(seed)
  const pick = () => LINES[Math.floor(random() * LINES.length)] as string
  const lines = () => Array.from({length: 1 + Math.floor(random() * 6)}, pick).join('\n') + (random() < 0.5 ? '\n' : '')
  const result: Case = {gitignore: {}, targonignore: {}}
  for (const home of HOMES) {
    if (home === '' || random() < 0.5) result.gitignore[home] = lines()
    if (random() < 0.3) result.targonignore[home] = lines()
  }

  return result
}

function writeFiles(root: string): void {
  for (const file of FILES) {
    mkdirSync(dirname(join(root, file)), {recursive: true})
    writeFileSync(join(root, file), file)
  }
}

/** Replaces every ignore file of the tree with these. */
function writeIgnoreFiles(root: string, ignoreFiles: Record<string, Record<string, string>>): void {
  for (const home of HOMES) for (const name of ['.gitignore', '.targonignore']) rmSync(join(root, home, name), {force: true})
  for (const [name, byDir] of Object.entries(ignoreFiles))
    for (const [dir, text] of Object.entries(byDir)) writeFileSync(join(root, dir, name), text)
}

const isolatedGit = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: tempDir('targon-git-home-'),
  XDG_CONFIG_HOME: tempDir('targon-git-xdg-'),
}

/** Two trees of FILES, each case's ignore files written into both: a scratch git repository, and one to walk. */
const oracleRoot = tempDir('targon-oracle-')
const walkRoot = tempDir('targon-walk-')
execFileSync('git', ['init', '-q', oracleRoot], {env: isolatedGit})
writeFiles(oracleRoot)
writeFiles(walkRoot)
afterAll(() => {
  rmSync(oracleRoot, {force: true, recursive: true})
  rmSync(walkRoot, {force: true, recursive: true})
})

/** The files of FILES that git does not ignore in a tree with these ignore files. */
function gitKeeps(ignore: Case): string[] {
  const merged: Record<string, string> = {...ignore.gitignore}
  for (const [dir, text] of Object.entries(ignore.targonignore)) merged[dir] = `${merged[dir] ?? ''}\n${text}`
  writeIgnoreFiles(oracleRoot, {'.gitignore': merged})
  // Exit 1 means that nothing is ignored.
  let out = ''
  try {
    out = execFileSync('git', ['-C', oracleRoot, 'check-ignore', '--no-index', '--stdin', '-z'], {
      encoding: 'utf8',
      env: isolatedGit,
      input: FILES.join('\0'),
    })
  } catch (error) {
    if ((error as {status?: number}).status !== 1) throw error
  }

  const ignored = new Set(out.split('\0').filter(Boolean))
  return FILES.filter((file) => !ignored.has(file)).sort()
}

async function walkKeeps(ignore: Case): Promise<string[]> {
  writeIgnoreFiles(walkRoot, {'.gitignore': ignore.gitignore, '.targonignore': ignore.targonignore})
  const tree = await walkLocal(walkRoot, {neverSent: []})
  return tree.files
    .map((file) => file.rel)
    .filter((rel) => !/(^|\/)\.(git|targon)ignore$/.test(rel))
    .sort()
}

describe('the ignore rules against git check-ignore', () => {
  it('keep the same files as git over 200 generated trees of ignore files', async () => {
    const outcomes = new Set<string>()
    for (let seed = 1; seed <= 200; seed++) {
      const ignore = generate(seed)
      const [ours, git] = [await walkKeeps(ignore), gitKeeps(ignore)]
      expect(ours, `seed ${seed}: ${JSON.stringify(ignore)}`).toEqual(git)
      outcomes.add(git.join(','))
    }

    // The cases differ: most trees keep a set of files no other tree keeps.
    expect(outcomes.size).toBeGreaterThan(120)
  }, 120_000)

  it.each([
    ['a negation re-includes a file', {'': '*.log\n!keep.log\n'}],
    ['an anchored pattern matches at its own level only', {'': '/main.c\n', src: ''}],
    ['a directory-only pattern leaves a file of that name', {'': 'build/\n'}],
    ['** spans directories', {'': 'deep/**/z.txt\n'}],
    ['escaped # and ! are names', {'': '\\#hash\n\\!bang\n'}],
    ['trailing spaces go unless escaped', {'': 'trail\\ \n*.c   \n'}],
    ['a nested file overrides its parent', {'': '*.c\n', src: '!main.c\n'}],
    ['nothing under an excluded directory comes back', {'': 'build/\n!build/keep.txt\n'}],
  ])('%s, as in git', async (_what, gitignore) => {
    const ignore = {gitignore, targonignore: {}}
    expect(await walkKeeps(ignore)).toEqual(gitKeeps(ignore))
  })

  it('reads .targonignore after .gitignore in the same directory, so that it wins', async () => {
    const ignore = {gitignore: {'': '*.log\n'}, targonignore: {'': '!debug.log\nREADME.md\n'}}
    const kept = await walkKeeps(ignore)
    expect(kept).toContain('debug.log')
    expect(kept).not.toContain('a.log')
    expect(kept).not.toContain('README.md')
  })
})

describe('the walk', () => {
  it('never sends .git or the root targon-out, skips links and names with control characters', async () => {
    const root = tempDir('targon-walk-')
    writeFiles(root)
    mkdirSync(join(root, '.git'))
    writeFileSync(join(root, '.git', 'config'), 'x')
    mkdirSync(join(root, 'src', '.git'))
    writeFileSync(join(root, 'src', '.git', 'HEAD'), 'x')
    mkdirSync(join(root, 'targon-out', 'job'), {recursive: true})
    writeFileSync(join(root, 'targon-out', 'job', 'result'), 'x')
    mkdirSync(join(root, 'src', 'targon-out'))
    writeFileSync(join(root, 'src', 'targon-out', 'kept'), 'x')
    writeFileSync(join(root, '.gitignore'), '!.git\n!targon-out\n')
    symlinkSync('/etc/passwd', join(root, 'passwd-link'))
    writeFileSync(join(root, 'line\nbreak'), 'x')
    const tree = await walkLocal(root, {neverSent: []})
    const rels = tree.files.map((file) => file.rel)
    expect(rels.filter((rel) => rel.includes('.git/') || rel.startsWith('targon-out'))).toEqual([])
    expect(rels).toContain('src/targon-out/kept')
    expect(tree.heldBack).toEqual([
      {kind: 'bad-name', path: '"line\\nbreak"', reason: 'its name has a control character'},
      {kind: 'link', path: 'passwd-link', reason: 'a symbolic link (not followed)'},
    ])
  })

  it('matches a name pattern at any depth and a path pattern below its own file only', () => {
    const rules = [...parseIgnoreFile('*.o\n/top\n', ''), ...parseIgnoreFile('gen/\n', 'src')]
    expect(isIgnored(rules, 'build/sub/x.o', false)).toBe(true)
    expect(isIgnored(rules, 'top', false)).toBe(true)
    expect(isIgnored(rules, 'src/top', false)).toBe(false)
    expect(isIgnored(rules, 'src/gen', true)).toBe(true)
    expect(isIgnored(rules, 'src/gen', false)).toBe(false)
    expect(isIgnored(rules, 'gen', true)).toBe(false)
  })
})
