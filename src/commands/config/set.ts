import {Args} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import {CONFIG_KEY_ARG} from '../../lib/cli/config-args.js'
import {CONFIG_KEYS, type ConfigResult, DEFAULT_PROFILE, parseKey, setValue, targetProfile} from '../../lib/workflows/config/index.js'
import {usageError} from '../../lib/core/errors.js'
import {prose} from '../../lib/core/output.js'
import {readSecret} from '../../lib/cli/prompt.js'

/** Keys whose values are secrets: read from stdin or a hidden prompt, never from argv (shell history, ps). */
const SECRETS = {
  'api-key': 'Targon API key',
  'dstack-token': 'dstack token',
  'heartbeat-url': 'heartbeat URL',
  'notify-url': 'notify URL',
} as const

export default class ConfigSet extends BaseCommand<typeof ConfigSet, 'config set'> {
  static summary = 'Store a setting in the config file (mode 0600).'

  static description = prose(`Keys: ${CONFIG_KEYS.join(', ')}. The API key is never taken from the command line (it would
land in shell history and ps): it is read from stdin, or from a hidden prompt on a terminal; so are notify-url, the
webhook that up and down report to, heartbeat-url, the ping URL of targon sweep, and dstack-token, the token of the
dstack server that targon dstack sync keeps a fleet on. With --profile (or
TARGON_PROFILE) the setting goes into that profile, which is created if need be; without, into the profile that
targon config use chose, else the default one (the file's top-level keys).`)

  static examples = [
    {command: '<%= config.bin %> config set max-price 1.8', description: 'A default price cap for targon up'},
    {command: '<%= config.bin %> config set org acme', description: 'The org to use'},
    {command: '<%= config.bin %> config set api-key', description: 'Prompts for the key without echoing it'},
    {command: '<%= config.bin %> config set --profile team org acme-team', description: 'Create profile team with its org'},
    {command: 'pass show targon | <%= config.bin %> config set api-key', description: 'Or pipe it in'},
  ]

  static args = {
    key: CONFIG_KEY_ARG,
    value: Args.string({
      ignoreStdin: true,
      description: 'the value (not for api-key, notify-url, heartbeat-url or dstack-token)',
      required: false,
    }),
  }

  public async run(): Promise<ConfigResult> {
    const key = parseKey(this.args.key)
    let value = this.args.value
    const secret = SECRETS[key as keyof typeof SECRETS]
    if (secret) {
      if (value !== undefined)
        throw usageError(
          `the ${secret} is never taken from the command line`,
          `run targon config set ${key}, then paste it at the prompt or pipe it on stdin`,
        )
      value = await readSecret(`${secret[0]?.toUpperCase()}${secret.slice(1)}: `, 'nothing was stored')
    }

    if (value === undefined) throw usageError(`no value for ${key}`, `targon config set ${key} <value>`)
    const dir = this.ctx.settings.dir
    const profile = await targetProfile(this.ctx.settings)
    this.acting.profile = profile
    const result = await setValue(dir, profile, key, value)
    this.info(`set ${key}${profile === DEFAULT_PROFILE ? '' : ` of profile ${profile}`} in ${result.path}`)
    return result
  }
}
