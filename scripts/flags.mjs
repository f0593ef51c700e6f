// Writes the snapshot of every command's flags and arguments to flags/ (from the oclif manifest of the build),
// so that a renamed flag, a changed default or a lost alias shows up in review and in test/cmd/flags.test.ts.
import {mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

const FLAG_FIELDS = [
  'name',
  'char',
  'aliases',
  'type',
  'multiple',
  'default',
  'options',
  'helpValue',
  'required',
  'allowNo',
  'exclusive',
  'env',
  'summary',
  'description',
]
const ARG_FIELDS = ['name', 'required', 'default', 'options', 'description']

/** The fields of `entry` named in `fields`, in that order, leaving out the ones it does not have. */
function pick(entry, fields) {
  return Object.fromEntries(fields.filter((field) => entry[field] !== undefined).map((field) => [field, entry[field]]))
}

/**
 * One file per command, named like its JSON Schema under schemas/ ("config:set" → config-set.json).
 * @param {{commands: Record<string, any>}} manifest the content of oclif.manifest.json
 * @returns {Record<string, unknown>}
 */
export function flagSnapshots(manifest) {
  return Object.fromEntries(
    Object.values(manifest.commands)
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((command) => [
        `${command.id.replaceAll(':', '-')}.json`,
        {
          args: Object.values(command.args).map((arg) => pick(arg, ARG_FIELDS)),
          flags: Object.values(command.flags)
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((flag) => pick(flag, FLAG_FIELDS)),
          id: command.id,
          strict: command.strict,
        },
      ]),
  )
}

export function readManifest() {
  return JSON.parse(readFileSync(new URL('../oclif.manifest.json', import.meta.url), 'utf8'))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = new URL('../flags/', import.meta.url)
  const snapshots = flagSnapshots(readManifest())
  // A removed command loses its file.
  rmSync(dir, {force: true, recursive: true})
  mkdirSync(dir, {recursive: true})
  for (const [file, snapshot] of Object.entries(snapshots)) writeFileSync(new URL(file, dir), `${JSON.stringify(snapshot, null, 2)}\n`)
  console.log(`flags/: ${Object.keys(snapshots).length} files`)
}
