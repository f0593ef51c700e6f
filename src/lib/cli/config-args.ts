/** The argument of the config commands that read or write one setting (get, set, unset). */
import {Args} from '@oclif/core'

import {CONFIG_KEYS} from '../adapters/settings/table.js'

export const CONFIG_KEY_ARG = Args.string({ignoreStdin: true, description: `one of: ${CONFIG_KEYS.join(', ')}`, required: true})
