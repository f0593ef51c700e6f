// Writes the command reference, docs/reference/ (an index and one Markdown page per command), from the oclif manifest
// of the build: every command, argument and flag with its description, default, options, environment variable and
// examples, as --help has them. The pages are never edited by hand: change a command's source, then regenerate with
//
//   npm run reference
//
// (the build, then this script). test/cmd/reference.test.ts fails when the checked-in pages differ from the build.
import {mkdirSync, rmSync, writeFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

import {readManifest} from './flags.mjs'

const BIN = 'targon'
const HEADER = '<!-- Generated from the oclif manifest by scripts/reference.mjs: do not edit; run npm run reference. -->'

/** Text from the manifest as Markdown prose: characters that Markdown would read as markup are escaped. */
function prose(text) {
  return text.replaceAll(/[\\<>[\]*|]/g, (char) => ({'<': '&lt;', '>': '&gt;'})[char] ?? `\\${char}`)
}

/** A description ended with a full stop, so that the facts after it read as sentences of their own. */
function sentence(text) {
  return /[.!?]$/.test(text) ? text : `${text}.`
}

/** A default as it is typed. */
function literal(value) {
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``
}

/** oclif's template variables in examples and usage, as a user types them. */
function typed(text) {
  return text.replaceAll('<%= config.bin %>', BIN).replaceAll('<%= command.id %>', '')
}

/** "config:set" → "targon config set". */
function commandLine(id) {
  return `${BIN} ${id.replaceAll(':', ' ')}`
}

/** "config:set" → "config-set.md", as flags/ and schemas/ name their files. */
export function pageName(id) {
  return `${id.replaceAll(':', '-')}.md`
}

function usage(command) {
  if (command.usage) return [command.usage].flat().map((line) => `${BIN} ${typed(line)}`)
  const args = Object.values(command.args).map((arg) => {
    const word = arg.name.toUpperCase()
    return arg.required ? word : `[${word}]`
  })
  if (command.strict === false && args.length > 0) args[args.length - 1] += '...'
  return [[commandLine(command.id), ...args, '[FLAGS]'].join(' ')]
}

/** The flag as it is typed: "-f, --fleet=NAME", "--[no-]color". */
function flagSignature(flag) {
  const long = flag.allowNo ? `--[no-]${flag.name}` : `--${flag.name}`
  const value = flag.type === 'option' ? `=${flag.helpValue ?? (flag.options ? flag.options.join('|') : '<value>')}` : ''
  return [flag.char && `-${flag.char}`, `${long}${value}`].filter(Boolean).join(', ')
}

// The description oclif gives its own --help flag, whose summary the commands already set.
const OCLIF_HELP_DESCRIPTION = 'Show CLI help.'

function flagEntry(flag) {
  const description = flag.description === OCLIF_HELP_DESCRIPTION ? undefined : flag.description
  const text = [flag.summary, description]
    .filter(Boolean)
    .map((part) => prose(sentence(part)))
    .join(' ')
  const facts = [
    flag.required && 'Required.',
    flag.multiple && 'Can be given more than once.',
    flag.default !== undefined && `Default: ${literal(flag.default)}.`,
    flag.options && `One of: ${flag.options.map((option) => `\`${option}\``).join(', ')}.`,
    flag.env && `Environment variable: \`${flag.env}\`.`,
    flag.aliases?.length > 0 && `Also: ${flag.aliases.map((alias) => `\`--${alias}\``).join(', ')}.`,
    flag.exclusive?.length > 0 && `Cannot be combined with ${flag.exclusive.map((other) => `\`--${other}\``).join(', ')}.`,
    flag.dependsOn?.length > 0 && `Needs ${flag.dependsOn.map((other) => `\`--${other}\``).join(', ')}.`,
  ].filter(Boolean)
  return `- \`${flagSignature(flag)}\`: ${[text, ...facts].filter(Boolean).join(' ')}`
}

function commandPage(command) {
  const flags = Object.values(command.flags)
    .filter((flag) => !flag.hidden)
    .sort((a, b) => a.name.localeCompare(b.name))
  const own = flags.filter((flag) => flag.helpGroup !== 'GLOBAL')
  const global = flags.filter((flag) => flag.helpGroup === 'GLOBAL')
  const args = Object.values(command.args)
  const lines = [HEADER, '', `# \`${commandLine(command.id)}\``, '', prose(command.summary), '', '```sh', ...usage(command), '```', '']
  if (command.description) lines.push(prose(command.description), '')
  if (args.length > 0) {
    lines.push('## Arguments', '')
    for (const arg of args) {
      const facts = [arg.required ? 'Required.' : 'Optional.', arg.default !== undefined && `Default: ${literal(arg.default)}.`]
      if (arg.options) facts.push(`One of: ${arg.options.map((option) => `\`${option}\``).join(', ')}.`)
      lines.push(
        `- \`${arg.name.toUpperCase()}\`: ${[arg.description && prose(sentence(arg.description)), ...facts].filter(Boolean).join(' ')}`,
      )
    }
    lines.push('')
  }
  if (own.length > 0) lines.push('## Flags', '', ...own.map(flagEntry), '')
  if (global.length > 0) lines.push('## Global flags', '', ...global.map(flagEntry), '')
  if (command.examples?.length > 0) {
    lines.push('## Examples', '')
    for (const example of command.examples) {
      const {command: line, description} = typeof example === 'string' ? {command: example} : example
      if (description) lines.push(`${prose(description)}:`, '')
      lines.push('```sh', typed(line), '```', '')
    }
  }
  return `${lines.join('\n').trimEnd()}\n`
}

function indexPage(commands) {
  const lines = [
    HEADER,
    '',
    '# Command reference',
    '',
    `Every command of \`${BIN}\`, with each argument and flag, as \`${BIN} COMMAND --help\` shows them. Exit codes, the`,
    'JSON output and the environment are described in [Scripting](../guides/scripting.md); the [manual](../README.md) has the rest.',
    '',
    '| Command | What it does |',
    '| --- | --- |',
    ...commands.map((command) => `| [\`${commandLine(command.id)}\`](${pageName(command.id)}) | ${prose(command.summary)} |`),
  ]
  return `${lines.join('\n')}\n`
}

/**
 * The pages of docs/reference/, by file name: README.md (the index) and one per command.
 * @param {{commands: Record<string, any>}} manifest the content of oclif.manifest.json
 * @returns {Record<string, string>}
 */
export function referencePages(manifest) {
  const commands = Object.values(manifest.commands)
    .filter((command) => !command.hidden)
    .sort((a, b) => a.id.localeCompare(b.id))
  return Object.fromEntries([
    ['README.md', indexPage(commands)],
    ...commands.map((command) => [pageName(command.id), commandPage(command)]),
  ])
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = new URL('../docs/reference/', import.meta.url)
  const pages = referencePages(readManifest())
  // A removed command loses its page.
  rmSync(dir, {force: true, recursive: true})
  mkdirSync(dir, {recursive: true})
  for (const [file, page] of Object.entries(pages)) writeFileSync(new URL(file, dir), page)
  console.log(`docs/reference/: ${Object.keys(pages).length} files`)
}
