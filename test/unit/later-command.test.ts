/** A command printed to paste later carries the run's config directory, fleet and profile where they are not the defaults. */
import {describe, expect, it} from 'vitest'

import {configDir} from '../../src/lib/adapters/settings/resolve.js'
import {laterCommand} from '../../src/lib/workflows/later-command.js'

describe('laterCommand', () => {
  it('adds only what is not the default, shell-quoted', () => {
    const home = configDir({})
    expect(laterCommand(['jobs', 'wait', 'j-1'], {configDir: home, fleet: 'default', profile: 'default'})).toBe('targon jobs wait j-1')
    expect(laterCommand(['jobs', 'wait', 'j-1'], {configDir: '/srv/my dir', fleet: 'train', profile: 'team'})).toBe(
      "TARGON_CONFIG_DIR='/srv/my dir' targon jobs wait j-1 --fleet train --profile team",
    )
    expect(laterCommand(['extend', 'vm-1', '--by', '1h'], {configDir: home, profile: "o'brien"}, ['--any-owner'])).toBe(
      "targon extend vm-1 --by 1h --profile 'o'\\''brien' --any-owner",
    )
  })
})
