// Writes oclif.manifest.json from the built commands, so that start-up loads only the command being run.
import {Plugin} from '@oclif/core'
import {writeFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const plugin = new Plugin({
  errorOnManifestCreate: true,
  ignoreManifest: true,
  isRoot: true,
  respectNoCacheDefault: true,
  root,
  type: 'core',
})
await plugin.load()
writeFileSync(new URL('../oclif.manifest.json', import.meta.url), JSON.stringify(plugin.manifest))
console.log(`oclif.manifest.json: ${Object.keys(plugin.manifest.commands).length} commands`)
