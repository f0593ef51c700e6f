/**
 * The shape the source keeps, beside lint's layer rules (eslint.config.js): a command is a shell that imports no
 * adapter and reaches a workflow folder only through its public entry, and no file grows past what one reader holds.
 */
import {readFileSync, readdirSync} from 'node:fs'
import {join, relative} from 'node:path'
import {describe, expect, it} from 'vitest'

const ROOT = new URL('../..', import.meta.url).pathname
const filesUnder = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), {recursive: true, encoding: 'utf8'})
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file))
const lineCount = (file: string) => readFileSync(join(ROOT, file), 'utf8').trimEnd().split('\n').length
const importsOf = (file: string) =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/from '([^']+)'/g)].map((match) => match[1] as string)

describe('the layers of the source', () => {
  const commands = filesUnder('src/commands')

  it('finds the commands', () => {
    expect(commands.length).toBeGreaterThan(25)
  })

  it('has no command that imports an adapter, or a workflow past its public entry', () => {
    const reaching = commands.flatMap((file) =>
      importsOf(file)
        .filter((path) => /\/lib\/adapters\//.test(path) || /\/lib\/workflows\/[^/]+\/(?!index\.js$)/.test(path))
        .map((path) => `${file}: ${path}`),
    )
    expect(reaching).toEqual([])
  })

  it('keeps every command within 150 lines, and every source file within 450', () => {
    const long = [...commands.filter((file) => lineCount(file) > 150), ...filesUnder('src').filter((file) => lineCount(file) > 450)].map(
      (file) => `${relative('.', file)}: ${lineCount(file)} lines`,
    )
    expect(long).toEqual([])
  })
})
