/** Which profile a run reads, and where its key and org come from: the precedence rules, without any network. */
import {chmodSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {SettingsResolver} from '../../src/lib/adapters/settings/resolve.js'
import type {SettingKey} from '../../src/lib/adapters/settings/table.js'
import {assertConfigDir, assertOwnDir, assertSecretFile} from '../../src/lib/adapters/state/trust.js'
import {tempDir} from '../helpers/cli.js'

const PERSONAL = 'tgn_personal_key_1'
const TEAM = 'tgn_team_key_2222'

/** A config directory with a personal default profile and a team profile; `extra` goes to the top level. */
function configWithProfiles(extra: Record<string, unknown> = {}): string {
  const dir = tempDir('targon-profiles-')
  chmodSync(dir, 0o700)
  const config = {'api-key': PERSONAL, org: 'acme', profiles: {team: {'api-key': TEAM, org: 'acme-research'}}, ...extra}
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config), {mode: 0o600})
  return dir
}

/** The profile a run with this environment and --profile reads. */
const activeProfile = (env: NodeJS.ProcessEnv, profileFlag?: string) => new SettingsResolver({env, profileFlag}).profile()
/** A setting of a run with this flag value, environment and --profile. */
const resolveSetting = (key: SettingKey, flag: string | undefined, env: NodeJS.ProcessEnv, profileFlag?: string) =>
  new SettingsResolver({env, profileFlag}).get(key, flag)

describe('the profile of a run', () => {
  it('is --profile, then TARGON_PROFILE, then config use, then default', async () => {
    const dir = configWithProfiles({profile: 'team'})
    expect(await activeProfile({TARGON_CONFIG_DIR: dir})).toMatchObject({name: 'team', source: 'config'})
    expect(await activeProfile({TARGON_CONFIG_DIR: configWithProfiles()})).toMatchObject({name: 'default', source: 'default'})
    expect(await activeProfile({TARGON_CONFIG_DIR: dir, TARGON_PROFILE: 'default'})).toMatchObject({name: 'default', source: 'env'})
    expect(await activeProfile({TARGON_CONFIG_DIR: dir, TARGON_PROFILE: 'default'}, 'team')).toMatchObject({by: '--profile', name: 'team'})
  })

  it('stays the default one for a run that takes its key from TARGON_API_KEY and names none, whatever config use says', async () => {
    const env = {TARGON_API_KEY: PERSONAL, TARGON_CONFIG_DIR: configWithProfiles({profile: 'team'})}
    expect(await activeProfile(env)).toMatchObject({name: 'default', source: 'default'})
    expect(await resolveSetting('org', undefined, env)).toBe('acme')
  })

  it('refuses a profile that the file does not hold, and a hand-edited choice of one without quoting it', async () => {
    await expect(activeProfile({TARGON_CONFIG_DIR: configWithProfiles(), TARGON_PROFILE: 'nosuch'})).rejects.toThrow(
      'there is no profile nosuch (named by TARGON_PROFILE)',
    )
    const pasted = configWithProfiles({profile: PERSONAL})
    await expect(activeProfile({TARGON_CONFIG_DIR: pasted})).rejects.toThrow(/"profile" names no profile of the file/)
    await expect(activeProfile({TARGON_CONFIG_DIR: pasted})).rejects.not.toThrow(PERSONAL)
  })
})

describe('the key and the org', () => {
  it("come from a named profile over the environment's, and a different key in the environment is refused", async () => {
    const dir = configWithProfiles()
    expect(await resolveSetting('api-key', undefined, {TARGON_CONFIG_DIR: dir, TARGON_PROFILE: 'team'})).toBe(TEAM)
    expect(await resolveSetting('org', undefined, {TARGON_CONFIG_DIR: dir, TARGON_ORG: 'acme', TARGON_PROFILE: 'team'})).toBe(
      'acme-research',
    )
    await expect(
      resolveSetting('api-key', undefined, {TARGON_API_KEY: PERSONAL, TARGON_CONFIG_DIR: dir, TARGON_PROFILE: 'team'}),
    ).rejects.toThrow('TARGON_API_KEY differs from the api-key of profile team (chosen by TARGON_PROFILE)')
    expect(await resolveSetting('api-key', undefined, {TARGON_API_KEY: TEAM, TARGON_CONFIG_DIR: dir, TARGON_PROFILE: 'team'})).toBe(TEAM)
  })

  it('come from the environment over the file otherwise, and --org wins over everything', async () => {
    const dir = configWithProfiles({profile: 'team'})
    expect(await resolveSetting('org', undefined, {TARGON_CONFIG_DIR: dir, TARGON_ORG: 'acme'})).toBe('acme')
    expect(await resolveSetting('org', undefined, {TARGON_CONFIG_DIR: dir})).toBe('acme-research')
    expect(await resolveSetting('org', 'other-org', {TARGON_CONFIG_DIR: dir}, 'team')).toBe('other-org')
  })
})

describe('two runs in one process', () => {
  it('each read their own --profile: the profile is an input of a run, not a state of the process', async () => {
    const env = {TARGON_CONFIG_DIR: configWithProfiles()}
    const team = new SettingsResolver({env, profileFlag: 'team'})
    const personal = new SettingsResolver({env})
    expect(await team.get('api-key')).toBe(TEAM)
    expect(await personal.get('api-key')).toBe(PERSONAL)
    expect(await team.get('org')).toBe('acme-research')
    expect((await team.withoutProfileFlag().profile()).name).toBe('default')
  })
})

describe('trusted files and directories', () => {
  it('refuses secrets others can read and directories others can write, with the fix', () => {
    const dir = tempDir('targon-trust-')
    writeFileSync(join(dir, 'key'), 'x', {mode: 0o644})
    chmodSync(join(dir, 'key'), 0o644)
    expect(() => assertSecretFile(join(dir, 'key'), 'private key')).toThrow(/readable by other users \(mode 644\)/)
    mkdirSync(join(dir, 'keys'))
    chmodSync(join(dir, 'keys'), 0o777)
    expect(() => assertOwnDir(join(dir, 'keys'), 'key directory')).toThrow(/writable by other users/)
    expect(() => assertSecretFile(join(dir, 'missing'), 'private key')).not.toThrow()
  })

  it('follows a config directory link once, and refuses a link to a link', () => {
    const base = tempDir('targon-links-')
    mkdirSync(join(base, 'real'), {mode: 0o700})
    symlinkSync(join(base, 'real'), join(base, 'link'))
    symlinkSync(join(base, 'link'), join(base, 'link2'))
    expect(() => assertConfigDir(join(base, 'link'))).not.toThrow()
    expect(() => assertConfigDir(join(base, 'link2'))).toThrow(/itself a link/)
  })
})
