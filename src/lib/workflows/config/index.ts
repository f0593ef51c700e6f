/** The public entry of the config workflows: what commands may use of them (lint holds commands to it). */
export {CONFIG_KEYS} from '../../adapters/settings/table.js'
export {
  DEFAULT_PROFILE,
  checkProfileName,
  chooseProfile,
  configFilePath,
  profileNames,
  removeProfile,
} from '../../adapters/settings/store.js'
export type {ActiveProfile} from '../../adapters/settings/profiles.js'
export {existingProfile, existingTargetProfile, parseKey, readValues, setValue, targetProfile, unsetValue} from './config.js'
export type {ConfigListResult, ConfigProfileResult, ConfigResult} from './schema.js'
