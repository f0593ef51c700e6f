/** The README stays a front page, and no link of the manual leads nowhere. */
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {dirname, join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAX_README_LINES = 250

/** README.md, RELIABILITY.md and every Markdown file under docs/, as paths from the root. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), {recursive: true, encoding: 'utf8'})
    .filter((file) => file.endsWith('.md'))
    .map((file) => join('docs', file))
  return ['README.md', 'RELIABILITY.md', ...docs].sort()
}

/** The text outside fenced code blocks, where a link is a link. */
function prose(text: string): string {
  return text.replaceAll(/^```[^\n]*\n[\s\S]*?^```$/gm, '')
}

/** The anchors a heading gets on GitHub: lowercase, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const match of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = (match[1] ?? '')
      .trim()
      .toLowerCase()
      .replaceAll(/[^\p{L}\p{N}\s_-]/gu, '')
      .replaceAll(' ', '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return result
}

/** Every relative link target of a Markdown text: `[text](target)`, without external and mail links. */
function relativeLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

describe('the manual', () => {
  it(`keeps the README a front page of at most ${MAX_README_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n')
    expect(lines.length).toBeLessThanOrEqual(MAX_README_LINES)
  })

  it('keeps the install and test commands on the front page', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    expect(readme).toContain('\nnpm ci && npm test ')
    expect(readme).toContain('\nnpm run demo ')
  })

  it('has a file, and a heading, behind every relative link of README.md and docs/', () => {
    const broken: string[] = []
    for (const document of documents()) {
      const text = readFileSync(join(ROOT, document), 'utf8')
      for (const target of relativeLinks(text)) {
        const [path = '', anchor] = target.split('#', 2)
        const file = path === '' ? join(ROOT, document) : join(ROOT, dirname(document), decodeURIComponent(path))
        if (!existsSync(file)) {
          broken.push(`${document}: ${target} (no file ${relative(ROOT, file)})`)
          continue
        }
        if (anchor === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) continue
        if (!anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${document}: ${target} (no heading #${anchor})`)
      }
    }
    expect(broken).toEqual([])
  })

  it('checks links the way GitHub makes anchors', () => {
    expect(anchors('# Following a run: events\n## `targon up`\n## Notes\n## Notes\n```\n# not a heading\n```\n')).toEqual(
      new Set(['following-a-run-events', 'targon-up', 'notes', 'notes-1']),
    )
    expect(relativeLinks('[a](b.md#c) [d](https://e.com) [f](mailto:g) `x`\n```\n[h](i.md)\n```\n')).toEqual(['b.md#c'])
  })
})
