import {BaseCommand} from '../../lib/cli/base-command.js'
import {
  type ActiveProfile,
  type ConfigListResult,
  DEFAULT_PROFILE,
  existingTargetProfile,
  profileNames,
  readValues,
} from '../../lib/workflows/config/index.js'
import {renderTable} from '../../lib/core/output.js'

export default class ConfigList extends BaseCommand<typeof ConfigList, 'config list'> {
  static summary = 'Show every setting of a profile (the API key masked), and which profile is active.'
  static description =
    'Precedence everywhere: flags, then environment variables, then the profile in this file. --profile (or TARGON_PROFILE) shows that profile.'

  static examples = [
    {command: '<%= config.bin %> config list', description: 'The settings of the active profile'},
    {command: '<%= config.bin %> config list --profile team', description: 'The settings of profile team'},
  ]

  public async run(): Promise<ConfigListResult> {
    const dir = this.ctx.settings.dir
    const profile = await existingTargetProfile(this.ctx.settings)
    this.acting.profile = profile
    // What a run without --profile uses: this command's --profile only says which profile to show.
    const active = await this.ctx.settings.withoutProfileFlag().profile()
    const result = {
      ...(await readValues(dir, profile)),
      active: {by: active.by, name: active.name},
      profiles: [DEFAULT_PROFILE, ...(await profileNames(dir))],
    }
    if (!this.jsonEnabled()) {
      this.log(
        renderTable(
          [
            {header: 'KEY', value: ([key]) => key.replaceAll('_', '-')},
            {header: 'VALUE', value: ([, value]) => value ?? '-'},
          ],
          Object.entries(result.values),
        ),
      )
      this.info(profileLine(profile, active, result.profiles))
      this.info(`file: ${result.path}`)
    }

    return result
  }
}

/**
 * Which profile is shown, whether runs use it now and why, and the others, in plain words:
 * "profile: default (the only one; runs use it)", "profile: team (runs use default, as no other profile is chosen);
 * other profiles: default".
 */
function profileLine(shown: string, active: ActiveProfile, profiles: string[]): string {
  const why = {
    config: 'as targon config use chose it',
    default: active.by === 'the default' ? 'as no other profile is chosen' : 'as TARGON_API_KEY is set and names no profile',
    env: 'as TARGON_PROFILE names it',
    flag: 'as --profile names it',
  }[active.source]
  const others = profiles.filter((name) => name !== shown)
  if (others.length === 0 && shown === active.name) return `profile: ${shown} (the only one; runs use it)`
  const use = shown === active.name ? `runs use it, ${why}` : `runs use ${active.name}, ${why}`
  return `profile: ${shown} (${use}); ${others.length === 0 ? 'no other profile' : `other profiles: ${others.join(', ')}`}`
}
