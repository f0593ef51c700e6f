/** The JSON contract of the targon config commands. */
import * as z from 'zod'

import {CONFIG_KEYS} from '../../adapters/settings/config-keys.js'

export const ConfigResultSchema = z.object({
  path: z.string(),
  profile: z.string().describe('the profile shown or changed; "default" is the top-level keys of the file'),
  values: z
    .object(Object.fromEntries(CONFIG_KEYS.map((key) => [configJsonKey(key), z.string().nullable().optional()])))
    .describe('by setting, null when unset; api_key is masked'),
})
export type ConfigResult = z.infer<typeof ConfigResultSchema>

export const ConfigListResultSchema = ConfigResultSchema.extend({
  profiles: z.array(z.string()).describe('every profile of the file, "default" first'),
  active: z
    .object({name: z.string(), by: z.string().describe('--profile, TARGON_PROFILE, targon config use, or the default')})
    .describe('the profile a run without --profile uses now'),
})
export type ConfigListResult = z.infer<typeof ConfigListResultSchema>

export const ConfigProfileResultSchema = z.object({
  path: z.string(),
  profile: z.string().describe('the profile chosen or removed'),
  profiles: z.array(z.string()).describe('every profile of the file afterwards, "default" first'),
})
export type ConfigProfileResult = z.infer<typeof ConfigProfileResultSchema>

/** The JSON name of a setting: api-key → api_key. */
export function configJsonKey(key: string): string {
  return key.replaceAll('-', '_')
}
