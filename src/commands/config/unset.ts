import {Args} from '@oclif/core'

import {BaseCommand} from '../../lib/shell/base-command.js'
import {parseKey, unsetValue} from '../../lib/settings/config-command.js'
import {CONFIG_KEYS, configDir} from '../../lib/settings/settings.js'
import type {ConfigResult} from '../../lib/contract.js'

export default class ConfigUnset extends BaseCommand<typeof ConfigUnset> {
  static summary = 'Remove a setting from the config file.'
  static examples = [{command: '<%= config.bin %> config unset api-key', description: 'Forget the stored API key'}]
  static args = {key: Args.string({ignoreStdin: true, description: `one of: ${CONFIG_KEYS.join(', ')}`, required: true})}

  public async run(): Promise<ConfigResult> {
    const result = await unsetValue(configDir(), parseKey(this.args.key))
    this.info(`unset ${this.args.key}`)
    return result
  }
}
