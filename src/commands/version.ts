import {BaseCommand} from '../lib/cli/base-command.js'
import type {VersionResult} from '../lib/cli/contract.js'
import {VERSION} from '../lib/core/version.js'

export default class Version extends BaseCommand<typeof Version, 'version'> {
  static summary = 'Print the version of targon (and of Node.js it runs on).'

  static description = 'The same as targon --version, as gh version and docker version do; with --json, as a JSON document.'

  static examples = [{command: '<%= config.bin %> version', description: 'The version, e.g. targon-fleet 0.1.0'}]

  public async run(): Promise<VersionResult> {
    const result = {node: process.versions.node, platform: `${process.platform}-${process.arch}`, version: VERSION}
    if (!this.jsonEnabled()) this.log(`${this.config.name} ${VERSION} (node ${result.node}, ${result.platform})`)
    return result
  }
}
