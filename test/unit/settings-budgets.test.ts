/** The time budgets a run reads from the environment: their defaults, and a value out of range named with its fix. */
import {describe, expect, it} from 'vitest'

import {SettingsResolver} from '../../src/lib/adapters/settings/resolve.js'
import type {SettingKey} from '../../src/lib/adapters/settings/table.js'
import {tempDir} from '../helpers/cli.js'

const budget = (key: SettingKey, env: NodeJS.ProcessEnv = {}) =>
  new SettingsResolver({env: {TARGON_CONFIG_DIR: tempDir('targon-budgets-'), ...env}}).get(key)

describe('the time budgets', () => {
  it('default to what the docs say, in milliseconds, and take seconds from the environment', async () => {
    expect(await budget('dstack-leave-timeout')).toBe(15_000)
    expect(await budget('ssh-connect-timeout')).toBe(30_000)
    expect(await budget('dstack-leave-timeout', {TARGON_DSTACK_LEAVE_TIMEOUT: '2.5'})).toBe(2500)
  })

  it('refuse a value out of range, naming the variable and the range', async () => {
    for (const value of ['0', '3601', 'soon'])
      await expect(budget('dstack-leave-timeout', {TARGON_DSTACK_LEAVE_TIMEOUT: value})).rejects.toThrow(
        `TARGON_DSTACK_LEAVE_TIMEOUT "${value}" is not a number of seconds from 1 to 3600`,
      )
  })
})
