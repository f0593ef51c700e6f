import {BaseCommand} from '../../lib/cli/base-command.js'
import {existingProfile, readValues, targetProfile} from '../../lib/settings/config-command.js'
import {renderTable} from '../../lib/core/output.js'
import {DEFAULT_PROFILE, activeProfile, configDir, profileNames} from '../../lib/settings/settings.js'
import type {ConfigListResult} from '../../lib/contract.js'

export default class ConfigList extends BaseCommand<typeof ConfigList, 'config list'> {
  static summary = 'Show every setting of a profile (the API key masked), and which profile is active.'
  static description =
    'Precedence everywhere: flags, then environment variables, then the profile in this file. --profile (or TARGON_PROFILE) shows that profile.'

  static examples = [
    {command: '<%= config.bin %> config list', description: 'The settings of the active profile'},
    {command: '<%= config.bin %> config list --profile team', description: 'The settings of profile team'},
  ]

  public async run(): Promise<ConfigListResult> {
    const dir = configDir()
    const profile = await existingProfile(dir, await targetProfile(dir, this.flags.profile))
    this.acting.profile = profile
    const active = await activeProfile()
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
      this.info(`profile: ${profile} (of ${result.profiles.join(', ')}); a run now uses ${active.name} (${active.by})`)
      this.info(`file: ${result.path}`)
    }

    return result
  }
}
