import {BaseCommand} from '../../lib/shell/base-command.js'
import {readValues} from '../../lib/settings/config-command.js'
import {renderTable} from '../../lib/shell/output.js'
import {configDir} from '../../lib/settings/settings.js'
import type {ConfigResult} from '../../lib/contract.js'

export default class ConfigList extends BaseCommand<typeof ConfigList> {
  static summary = 'Show every setting of the config file (the API key masked).'
  static description = 'Precedence everywhere: flags, then environment variables, then this file.'
  static examples = [{command: '<%= config.bin %> config list', description: 'All settings'}]

  public async run(): Promise<ConfigResult> {
    const result = await readValues(configDir())
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
      this.info(`file: ${result.path}`)
    }

    return result
  }
}
