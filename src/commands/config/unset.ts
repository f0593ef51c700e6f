import {BaseCommand} from '../../lib/cli/base-command.js'
import {CONFIG_KEY_ARG} from '../../lib/cli/config-args.js'
import {type ConfigResult, DEFAULT_PROFILE, existingTargetProfile, parseKey, unsetValue} from '../../lib/workflows/config/index.js'

export default class ConfigUnset extends BaseCommand<typeof ConfigUnset, 'config unset'> {
  static summary = 'Remove a setting of a profile from the config file.'
  static examples = [{command: '<%= config.bin %> config unset api-key', description: 'Forget the stored API key'}]
  static args = {key: CONFIG_KEY_ARG}

  public async run(): Promise<ConfigResult> {
    const key = parseKey(this.args.key)
    const dir = this.ctx.settings.dir
    const profile = await existingTargetProfile(this.ctx.settings)
    this.acting.profile = profile
    const result = await unsetValue(dir, profile, key)
    this.info(`unset ${key}${profile === DEFAULT_PROFILE ? '' : ` in profile ${profile}`}`)
    return result
  }
}
