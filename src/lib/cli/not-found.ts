/**
 * oclif's command_not_found hook. With spaces as topic separators, oclif reads the words after a command that
 * takes no positional arguments as more of its name: `targon offers h200` looks for a command "offers h200".
 * Such a run goes to the longest command that matches, whose own parser refuses the stray argument (exit 2,
 * with the JSON envelope under --json). Anything else is an unknown command: exit 127 with the closest command
 * as a suggestion, with or without a terminal.
 */
import {type Hook, toConfiguredId} from '@oclif/core'

import {UNKNOWN_COMMAND_EXIT} from '../core/errors.js'
import {editDistance} from '../core/similar.js'

export const commandNotFound: Hook<'command_not_found'> = async function ({argv, config, id}) {
  const words = id.split(':')
  for (let length = words.length - 1; length > 0; length--) {
    const command = words.slice(0, length).join(':')
    if (config.findCommand(command)) return config.runCommand(command, [...words.slice(length), ...(argv ?? [])])
  }

  const visible = config.commands.filter((command) => !command.hidden).map((command) => command.id)
  const suggestion = visible.sort((a, b) => editDistance(id, a) - editDistance(id, b))[0]
  const didYouMean = suggestion ? ` Did you mean ${toConfiguredId(suggestion, config)}?` : ''
  this.error(`${toConfiguredId(id, config)} is not a ${config.bin} command.${didYouMean} Run ${config.bin} help for a list of commands.`, {
    exit: UNKNOWN_COMMAND_EXIT,
  })
}
