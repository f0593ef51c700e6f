import {Args} from '@oclif/core'

import {BaseCommand} from '../../lib/shell/base-command.js'
import {parseKey, readValues} from '../../lib/settings/config-command.js'
import {CONFIG_KEYS, configDir} from '../../lib/settings/settings.js'
import type {ConfigResult} from '../../lib/contract.js'

export default class ConfigGet extends BaseCommand<typeof ConfigGet> {
  static summary = 'Print one setting (the API key masked).'
  static examples = [{command: '<%= config.bin %> config get max-price', description: 'The default price cap'}]
  static args = {key: Args.string({ignoreStdin: true, description: `one of: ${CONFIG_KEYS.join(', ')}`, required: true})}

  public async run(): Promise<ConfigResult> {
    const key = parseKey(this.args.key)
    const result = await readValues(configDir(), [key])
    const value = Object.values(result.values)[0] ?? null
    if (!this.jsonEnabled() && value !== null) this.log(value)
    return result
  }
}
