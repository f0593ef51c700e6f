/**
 * Every hint names only flags that exist where it is printed. The hints are read from the sources: each `hint:`
 * property and each usageError's second argument, with the constants they name in the same file. A `--flag` right
 * after `targon <command>` (in the same clause: clauses end at , ; ( and )) belongs to that
 * command; any other belongs to the commands that can print the hint: the command of a file under src/commands, or,
 * for a hint elsewhere, the commands that PRINTED_BY lists for its file. The flags of each command are its snapshot
 * under flags/ (npm run flags). A file with such a hint and no entry in PRINTED_BY fails the test: say there which
 * commands reach it.
 */
import {readFileSync, readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import ts from 'typescript'
import {describe, expect, it} from 'vitest'

import {UP_ONLY_FLAGS} from '../../src/lib/workflows/job/rent.js'
import {ROOT} from '../helpers/cli.js'

/** Every command: each takes --help, --json, --org, --profile and --verbose. */
const EVERY = readdirSync(join(ROOT, 'flags')).map((name) => name.replace(/\.json$/, '').replace('-', ':'))

/**
 * Files outside src/commands whose hints name a flag of the command that prints them, and those commands. up's
 * workflow (src/lib/workflows/up) also rents for run, whose rent (run/rent.ts) says of a hint that names a flag of
 * UP_ONLY_FLAGS that it is up's: run may print such a flag.
 */
const PRINTED_BY: Record<string, string[]> = {
  // --events-file: only commands with --events or --events-file open one (Reporter.follow).
  'src/lib/adapters/events/ndjson.ts': ['cp', 'down', 'exec', 'jobs:wait', 'run', 'sweep', 'up'],
  'src/lib/cli/reporter.ts': ['cp', 'down', 'exec', 'jobs:wait', 'run', 'sweep', 'up'],
  // The org (--org, e.g. --org acme), --help and --verbose: any command.
  'src/lib/adapters/settings/table.ts': EVERY,
  'src/lib/adapters/targon/org.ts': EVERY,
  'src/lib/cli/base-command.ts': EVERY,
  'src/lib/core/errors.ts': EVERY,
  // An answer of no capacity: to a create only.
  'src/lib/adapters/targon/http.ts': ['up', 'run'],
  'src/lib/cli/guard-flags.ts': ['guard:install', 'guard:print'],
  // The request parsers of commands: the usage errors of their own command.
  'src/lib/cli/requests/cost.ts': ['cost'],
  'src/lib/cli/requests/run.ts': ['run'],
  'src/lib/cli/requests/up.ts': ['up'],
  'src/lib/cli/requests/down.ts': ['down'],
  'src/lib/domain/capacity/candidates.ts': ['up', 'run'],
  'src/lib/domain/capacity/watch.ts': ['up', 'run'],
  // --vms: the commands that take it (parseVmList), and a selection with no VM named (selectVms).
  'src/lib/domain/fleet/fan-out.ts': ['exec', 'cp', 'jobs', 'jobs:cancel', 'jobs:fetch', 'jobs:logs', 'jobs:wait'],
  'src/lib/workflows/select-vms.ts': ['exec', 'cp', 'jobs', 'jobs:cancel', 'jobs:fetch', 'jobs:logs', 'jobs:wait'],
  'src/lib/domain/fleet/naming.ts': ['up'],
  // The shim phase refuses --force-shim, which only up passes (run's rent never does).
  'src/lib/adapters/bootstrap/shim.ts': ['up'],
  // What run's sync sends, and the working directory it refuses.
  'src/lib/workflows/job/workdir.ts': ['run'],
  'src/lib/workflows/sync/held-back.ts': ['run'],
  // A bulk deletion of VMs of several owners; guard install gives its dry run of the sweep a hint of its own.
  'src/lib/domain/fleet/owners.ts': ['down', 'sweep'],
  'src/lib/workflows/copy/copy.ts': ['cp'],
  'src/lib/workflows/copy/spec.ts': ['cp'],
  'src/lib/workflows/down/down.ts': ['down'],
  'src/lib/workflows/down/targets.ts': ['down'],
  'src/lib/workflows/down-request/request.ts': ['down'],
  'src/lib/workflows/extend/extend.ts': ['extend'],
  'src/lib/workflows/guard/installed.ts': ['guard:install'],
  'src/lib/workflows/job/complete.ts': ['run', 'jobs:wait'],
  'src/lib/workflows/job/job.ts': ['run'],
  'src/lib/workflows/job/jobs.ts': ['jobs', 'jobs:cancel', 'jobs:fetch', 'jobs:logs', 'jobs:wait'],
  'src/lib/workflows/job/rent.ts': ['run'],
  'src/lib/workflows/job/run-request.ts': ['run'],
  'src/lib/workflows/spend/credits-check.ts': ['cost', 'credits', 'sweep'],
  'src/lib/cli/requests/sweep.ts': ['sweep'],
  'src/lib/workflows/up/plan.ts': ['up'],
  'src/lib/workflows/up/provisioning.ts': ['up', 'run'],
  'src/lib/workflows/up/register.ts': ['up', 'run'],
  'src/lib/workflows/up/up.ts': ['up', 'run'],
  'src/lib/workflows/up/wait-running.ts': ['up', 'run'],
}

interface Hint {
  file: string
  line: number
  text: string
}

const COMMANDS = EVERY

/** The flags a command takes, with --no-X for a boolean that allows it. */
function flagsOf(command: string): Set<string> {
  const file = join(ROOT, 'flags', `${command.replace(':', '-')}.json`)
  const {flags} = JSON.parse(readFileSync(file, 'utf8')) as {flags: {name: string; allowNo?: boolean}[]}
  return new Set(flags.flatMap((flag) => (flag.allowNo ? [flag.name, `no-${flag.name}`] : [flag.name])))
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** The hint texts of a file: one per alternative (the branches of a condition, the entries of a table of hints). */
function hintsOf(path: string): Hint[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const constants = new Map<string, ts.Expression>()
  const hints: ts.Expression[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) constants.set(node.name.text, node.initializer)
    if (ts.isPropertyAssignment(node) && node.name.getText(source) === 'hint') hints.push(node.initializer)
    if (ts.isCallExpression(node) && node.expression.getText(source) === 'usageError' && node.arguments[1]) hints.push(node.arguments[1])
    ts.forEachChild(node, visit)
  }
  visit(source)

  /** The texts an expression can give: a condition's branches and a table's entries are alternatives. */
  const textsOf = (node: ts.Node, seen: Set<string>): string[] => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text]
    if (ts.isTemplateExpression(node))
      return node.templateSpans.reduce(
        (texts, span) => texts.flatMap((text) => textsOf(span.expression, seen).map((each) => text + each + span.literal.text)),
        [node.head.text],
      )
    if (ts.isParenthesizedExpression(node)) return textsOf(node.expression, seen)
    if (ts.isConditionalExpression(node)) return [...textsOf(node.whenTrue, seen), ...textsOf(node.whenFalse, seen)]
    if (ts.isBinaryExpression(node)) return [...textsOf(node.left, seen), ...textsOf(node.right, seen)]
    if (ts.isIdentifier(node) && constants.has(node.text) && !seen.has(node.text))
      return textsOf(constants.get(node.text) as ts.Expression, new Set([...seen, node.text]))
    if (ts.isElementAccessExpression(node)) return textsOf(node.expression, seen)
    if (ts.isObjectLiteralExpression(node))
      return node.properties.flatMap((property) => (ts.isPropertyAssignment(property) ? textsOf(property.initializer, seen) : []))
    // A helper's text arguments (notFoundHint(suggestion, 'run targon status')) are hints of their own.
    if (ts.isCallExpression(node))
      return ['…', ...node.arguments.flatMap((argument) => textsOf(argument, seen).filter((text) => text !== '…'))]
    return ['…']
  }

  return hints.flatMap((node) =>
    textsOf(node, new Set()).map((text) => ({
      file: relative(ROOT, path),
      line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
      text,
    })),
  )
}

/** Each --flag of a hint, with the command it belongs to when the hint names one right before it (`targon jobs logs`). */
function flagsNamed(text: string): {flag: string; command: string | null}[] {
  return text.split(/[,;()]/).flatMap((clause) => {
    const named: {flag: string; command: string | null}[] = []
    let command: string | null = null
    for (const match of clause.matchAll(/targon((?: [a-z]+)+)|--([a-z][a-z0-9-]*)/g)) {
      if (match[2] !== undefined) named.push({command, flag: match[2]})
      else {
        const words = (match[1] as string).trim().split(' ')
        while (words.length > 0 && !COMMANDS.includes(words.join(':'))) words.pop()
        command = words.length > 0 ? words.join(':') : command
      }
    }

    return named
  })
}

/** The command of a file under src/commands (jobs/list.ts is `jobs`). */
function commandOfFile(file: string): string | undefined {
  const match = /^src\/commands\/(.+)\.ts$/.exec(file)
  return match ? (match[1] as string).replace('/', ':').replace(/^jobs:list$/, 'jobs') : undefined
}

const HINTS = sources(join(ROOT, 'src')).flatMap(hintsOf)

describe('the flags that hints name', () => {
  it('finds the hints (the scan reads what it should)', () => {
    expect(HINTS.length).toBeGreaterThan(100)
    expect(HINTS.some((hint) => hint.text.includes('pass --any-owner'))).toBe(true)
  })

  it.each(HINTS.filter((hint) => flagsNamed(hint.text).length > 0).map((hint) => [`${hint.file}:${hint.line}`, hint] as const))(
    '%s names only flags of the commands that print it',
    (_, hint) => {
      const printers = commandOfFile(hint.file) ? [commandOfFile(hint.file) as string] : PRINTED_BY[hint.file]
      const wrong: string[] = []
      for (const {flag, command} of flagsNamed(hint.text)) {
        if (command) {
          if (!flagsOf(command).has(flag)) wrong.push(`targon ${command.replace(':', ' ')} has no --${flag}`)
          continue
        }

        if (!printers) {
          wrong.push(`--${flag}: add ${hint.file} to PRINTED_BY with the commands that print it`)
          continue
        }

        for (const printer of printers) {
          const markedAsUps = printer === 'run' && hint.file.startsWith('src/lib/workflows/up/') && UP_ONLY_FLAGS.test(`--${flag}`)
          if (!flagsOf(printer).has(flag) && !markedAsUps) wrong.push(`${printer.replace(':', ' ')} has no --${flag}`)
        }
      }

      expect(wrong, hint.text).toEqual([])
    },
  )

  it('lists in PRINTED_BY only files that exist and commands that exist', () => {
    for (const [file, commands] of Object.entries(PRINTED_BY)) {
      expect(statSync(join(ROOT, file)).isFile(), file).toBe(true)
      for (const command of commands) expect(COMMANDS, file).toContain(command)
    }
  })
})
