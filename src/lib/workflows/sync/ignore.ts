/**
 * git's ignore rules, in-house: the lines of a `.gitignore` (or `.targonignore`, same syntax) become rules, and a
 * path is ignored when the last rule that matches it, over every ignore file from the tree's root down to its own
 * directory, is not a negation. As in git: a line's trailing spaces go unless escaped, `#` starts a comment and `!`
 * negates (`\#`, `\!` for the characters); a trailing `/` matches directories only; a pattern with a slash before its
 * end is anchored to its file's directory, one without matches a name at any depth; `*`, `?` and `[...]` never match
 * `/`, `**` spans directories only as `**\/`, `/**\/` or `/**`. What git does not do, this does not do either: the
 * walk never enters an ignored directory, so nothing below it can be re-included (sync.ts walks that way).
 * Patterns are matched as wildmatch (git's matcher) does, translated to regular expressions; unit tests hold it to
 * `git check-ignore` over a generated set of tricky patterns.
 */

export interface IgnoreRule {
  /** The directory of the ignore file, relative to the tree's root ('' at the root). */
  base: string
  negated: boolean
  directoryOnly: boolean
  /** Matched against the name alone (the pattern had no slash before its end), else against the path below base. */
  nameOnly: boolean
  /** Null for a pattern that can never match (an unclosed `[`, a trailing lone backslash). */
  regex: RegExp | null
}

/** The rules of one ignore file's text, in its order; `base` is the file's directory relative to the tree's root. */
export function parseIgnoreFile(text: string, base: string): IgnoreRule[] {
  const rules: IgnoreRule[] = []
  for (const rawLine of text.replace(/^\uFEFF/, '').split('\n')) {
    if (rawLine === '' || rawLine.startsWith('#')) continue
    let pattern = trimTrailingSpaces(rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine)
    const negated = pattern.startsWith('!')
    if (negated) pattern = pattern.slice(1)
    const directoryOnly = pattern.endsWith('/')
    if (directoryOnly) pattern = pattern.slice(0, -1)
    const nameOnly = !pattern.includes('/')
    if (!nameOnly && pattern.startsWith('/')) pattern = pattern.slice(1)
    rules.push({base, directoryOnly, nameOnly, negated, regex: wildmatchRegex(pattern)})
  }

  return rules
}

/** Whether the path (relative to the tree's root, no trailing slash) is ignored: the last matching rule decides. */
export function isIgnored(rules: readonly IgnoreRule[], path: string, isDirectory: boolean): boolean {
  const rule = lastMatch(rules, path, isDirectory)
  return rule !== null && !rule.negated
}

/** The last of the rules that matches the path (relative to the tree's root, no trailing slash); null when none does. */
export function lastMatch(rules: readonly IgnoreRule[], path: string, isDirectory: boolean): IgnoreRule | null {
  const name = path.slice(path.lastIndexOf('/') + 1)
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index] as IgnoreRule
    if (rule.regex === null || (rule.directoryOnly && !isDirectory)) continue
    if (rule.base !== '' && !path.startsWith(`${rule.base}/`)) continue
    const subject = rule.nameOnly ? name : rule.base === '' ? path : path.slice(rule.base.length + 1)
    if (rule.regex.test(subject)) return rule
  }

  return null
}

/** git's trim_trailing_spaces: the run of spaces at the end goes, unless a backslash escapes its first space. */
function trimTrailingSpaces(line: string): string {
  let lastSpace = -1
  for (let index = 0; index < line.length; index++) {
    const char = line[index]
    if (char === ' ') {
      if (lastSpace < 0) lastSpace = index
    } else if (char === '\\') {
      index++
      if (index >= line.length) return line
      lastSpace = -1
    } else lastSpace = -1
  }

  return lastSpace < 0 ? line : line.slice(0, lastSpace)
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: 'a-zA-Z0-9',
  alpha: 'a-zA-Z',
  blank: ' \\t',
  cntrl: '\\x00-\\x1f\\x7f',
  digit: '0-9',
  graph: '\\x21-\\x7e',
  lower: 'a-z',
  print: '\\x20-\\x7e',
  punct: '!-\\/:-@\\[-`{-~',
  space: ' \\t\\n\\r\\f\\v',
  upper: 'A-Z',
  xdigit: '0-9A-Fa-f',
}

const literal = (char: string) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`

/** A wildmatch pattern (with WM_PATHNAME: wildcards stop at `/`) as an anchored regular expression. */
function wildmatchRegex(pattern: string): RegExp | null {
  let out = ''
  let index = 0
  while (index < pattern.length) {
    const char = pattern[index] as string
    if (char === '\\') {
      // A lone backslash at the end matches nothing, as in wildmatch.
      if (index + 1 >= pattern.length) return null
      out += literal(pattern[index + 1] as string)
      index += 2
    } else if (char === '*') {
      let end = index
      while (pattern[end] === '*') end++
      const atSegmentStart = index === 0 || pattern[index - 1] === '/'
      const atSegmentEnd = end === pattern.length || pattern[end] === '/'
      if (end - index >= 2 && atSegmentStart && atSegmentEnd) {
        if (end === pattern.length) out += '.*'
        else {
          // "**/": any number of whole directories, none included.
          out += '(?:.*/)?'
          end++
        }
      } else out += '[^/]*'
      index = end
    } else if (char === '?') {
      out += '[^/]'
      index++
    } else if (char === '[') {
      const parsed = bracket(pattern, index)
      if (parsed === null) return null
      out += parsed.regex
      index = parsed.end
    } else {
      out += literal(char)
      index++
    }
  }

  return new RegExp(`^${out}$`, 'su')
}

/** A `[...]` class starting at `start`: its regex and the index after its `]`; null when it never closes or is malformed. */
function bracket(pattern: string, start: number): {regex: string; end: number} | null {
  let index = start + 1
  let negated = false
  if (pattern[index] === '!' || pattern[index] === '^') {
    negated = true
    index++
  }

  const parts: string[] = []
  let previous: string | null = null
  let first = true
  for (;;) {
    if (index >= pattern.length) return null
    let char = pattern[index] as string
    if (char === ']' && !first) break
    first = false
    if (char === '\\') {
      index++
      if (index >= pattern.length) return null
      char = pattern[index] as string
      parts.push(literal(char))
      previous = char
      index++
    } else if (char === '-' && previous !== null && index + 1 < pattern.length && pattern[index + 1] !== ']') {
      let high = pattern[index + 1] as string
      index += 2
      if (high === '\\') {
        if (index >= pattern.length) return null
        high = pattern[index] as string
        index++
      }

      // The low end already stands as a literal; a reversed range adds nothing to it, as in wildmatch.
      if ((previous.codePointAt(0) as number) <= (high.codePointAt(0) as number)) parts.push(`${literal(previous)}-${literal(high)}`)
      previous = null
    } else if (char === '[' && pattern[index + 1] === ':' && posixClassEnd(pattern, index) !== 'literal') {
      const close = posixClassEnd(pattern, index)
      if (close === null) return null
      const members = POSIX_CLASSES[pattern.slice(index + 2, (close as number) - 1)]
      if (members === undefined) return null
      parts.push(members)
      index = (close as number) + 1
      previous = null
    } else {
      parts.push(literal(char))
      previous = char
      index++
    }
  }

  const members = parts.join('')
  // A class never matches "/"; an empty one (after a reversed range) matches nothing, or anything when negated.
  const regex = negated ? `[^/${members}]` : members === '' ? '(?!)' : `(?!/)[${members}]`
  return {end: index + 1, regex}
}

/**
 * Where a `[:name:]` inside a class ends (the index of its `]`), as wildmatch finds it: at the first `]`, which must
 * follow a `:`, else the `[` is a plain member ('literal'); null when no `]` follows at all (the pattern is malformed).
 */
function posixClassEnd(pattern: string, open: number): number | 'literal' | null {
  const close = pattern.indexOf(']', open + 2)
  if (close < 0) return null
  return close - 1 >= open + 2 && pattern[close - 1] === ':' ? close : 'literal'
}
