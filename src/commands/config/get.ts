import {BaseCommand} from '../../lib/cli/base-command.js'
import {CONFIG_KEY_ARG} from '../../lib/cli/config-args.js'
import {type ConfigResult, existingTargetProfile, parseKey, readValues} from '../../lib/workflows/config/index.js'

export default class ConfigGet extends BaseCommand<typeof ConfigGet, 'config get'> {
  static summary = 'Print one setting of a profile (the API key masked).'
  static examples = [
    {command: '<%= config.bin %> config get max-price', description: 'The default price cap'},
    {command: '<%= config.bin %> config get org --profile team', description: 'The org of profile team'},
  ]
  static args = {key: CONFIG_KEY_ARG}

  public async run(): Promise<ConfigResult> {
    const key = parseKey(this.args.key)
    const dir = this.ctx.settings.dir
    const profile = await existingTargetProfile(this.ctx.settings)
    this.acting.profile = profile
    const result = await readValues(dir, profile, [key])
    const value = Object.values(result.values)[0] ?? null
    if (!this.jsonEnabled() && value !== null) this.log(value)
    return result
  }
}
