/**
 * What every command is built from: its clock, the environment its settings are read from, and how it connects to
 * the API. The process has one factory (the real clock, process.env, the Targon API); a test hands a command its own
 * (a fake clock shared with the simulator, a test environment), so that no command or workflow builds any of these
 * itself. The run context (workflows/run-context.ts) is made from it by the base command.
 */
import {type Clock, REAL_CLOCK} from '../core/clock.js'
import {type ConnectOptions, connect} from '../adapters/targon/connect.js'
import type {SettingsResolver} from '../adapters/settings/resolve.js'
import type {TargonClient} from '../adapters/targon/client.js'

export interface Factory {
  readonly clock: Clock
  /** The environment the run's settings are read from. */
  readonly env: NodeJS.ProcessEnv
  /** A client of the Targon API, for the run's settings. */
  connect(settings: SettingsResolver, options: ConnectOptions): Promise<TargonClient>
}

/** This process's: the real clock, its environment and the API the settings name. */
export function processFactory(): Factory {
  // The only place a command reads the process's environment as a whole.
  // eslint-disable-next-line no-restricted-properties
  return {clock: REAL_CLOCK, connect, env: process.env}
}
