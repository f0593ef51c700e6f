import {Args} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import {
  checkProfileName,
  chooseProfile,
  configFilePath,
  type ConfigProfileResult,
  DEFAULT_PROFILE,
  existingProfile,
  profileNames,
} from '../../lib/workflows/config/index.js'
import {prose} from '../../lib/core/output.js'

export default class ConfigUse extends BaseCommand<typeof ConfigUse, 'config use'> {
  static summary = 'Choose the profile for runs that name none.'

  static description = prose(`A run with --profile or TARGON_PROFILE uses that one instead. A run that takes its API key
from TARGON_API_KEY and names no profile keeps the default profile, so that a cron line acts where it did.`)

  static examples = [
    {command: '<%= config.bin %> config use team', description: 'Runs use profile team from now on'},
    {command: '<%= config.bin %> config use default', description: "Back to the file's top-level settings"},
  ]

  static args = {profile: Args.string({ignoreStdin: true, description: 'a profile of the file, or default', required: true})}

  public async run(): Promise<ConfigProfileResult> {
    const dir = this.ctx.settings.dir
    const profile = await existingProfile(dir, checkProfileName(this.args.profile, 'the profile'))
    await chooseProfile(dir, profile)
    this.acting.profile = profile
    this.info(`runs that name no profile now use ${profile}`)
    return {path: configFilePath(dir), profile, profiles: [DEFAULT_PROFILE, ...(await profileNames(dir))]}
  }
}
