import {Args} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import {
  checkProfileName,
  configFilePath,
  type ConfigProfileResult,
  DEFAULT_PROFILE,
  existingProfile,
  profileNames,
  removeProfile,
} from '../../lib/workflows/config/index.js'
import {usageError} from '../../lib/core/errors.js'

export default class ConfigRemove extends BaseCommand<typeof ConfigRemove, 'config remove'> {
  static summary = 'Delete a profile from the config file (runs that used it by config use go back to the default one).'
  static examples = [{command: '<%= config.bin %> config remove client-x', description: 'Forget profile client-x and its key'}]
  static args = {profile: Args.string({ignoreStdin: true, description: 'a profile of the file', required: true})}

  public async run(): Promise<ConfigProfileResult> {
    const dir = this.ctx.settings.dir
    const profile = checkProfileName(this.args.profile, 'the profile')
    if (profile === DEFAULT_PROFILE)
      throw usageError('the default profile cannot be removed', 'unset its keys with targon config unset KEY')
    await removeProfile(dir, await existingProfile(dir, profile))
    this.info(`removed profile ${profile}`)
    return {path: configFilePath(dir), profile, profiles: [DEFAULT_PROFILE, ...(await profileNames(dir))]}
  }
}
