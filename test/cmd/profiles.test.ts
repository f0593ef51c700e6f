/**
 * Profiles: a personal key and org as the default profile, a team's as profile "team", in one config directory.
 * Each run rents in the org of the profile it names or that `config use` chose; a cron line with its own key keeps
 * acting where it did; a key of the environment that differs from a named profile's is refused. Every envelope
 * says which profile and org a run acted on.
 */
import {describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'

// The key comes from each profile, not from the environment.
const ctx = useFreshFixture({env: {TARGON_API_KEY: undefined}, inProcess: true})
const {targon} = ctx
const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap']

/** The org a successful up rented in, by the simulator's ledger, and what its envelope says. */
async function rentsIn(args: string[], env: Record<string, string> = {}): Promise<{sim: string; profile: string; org: string}> {
  const up = await targon([...UP, ...args, '--json'], {env})
  expect(up.code, up.stdout + up.stderr).toBe(0)
  const doc = parseJson(up)
  return {org: doc.org, profile: doc.profile, sim: ctx.sim.current(doc.data.vms[0].uid)!.org}
}

describe('profiles', () => {
  it('rent in the org of the profile a run names or that config use chose, and say so', async () => {
    await ctx.setup()
    expect((await targon(['config', 'set', 'api-key'], {input: 'tgn_sim_test_key\n'})).code).toBe(0)
    // config list says in plain words which profile it shows, whether runs use it, and why.
    expect((await targon(['config', 'list'])).stderr).toContain('profile: default (the only one; runs use it)\n')
    expect((await targon(['config', 'set', '--profile', 'team', 'api-key'], {input: 'tgn_sim_team_key\n'})).code).toBe(0)
    expect((await targon(['config', 'set', '--profile', 'team', 'org', 'acme-research'])).code).toBe(0)
    expect((await targon(['config', 'set', 'owner', 'alice'], {env: {TARGON_PROFILE: 'team'}})).code).toBe(0)
    expect(parseJson(await targon(['config', 'get', 'owner', '--profile', 'team', '--json'])).data.values).toEqual({owner: 'alice'})

    expect(await rentsIn([])).toEqual({org: 'acme', profile: 'default', sim: 'acme'})
    expect(await rentsIn(['--profile', 'team'])).toEqual({org: 'acme-research', profile: 'team', sim: 'acme-research'})
    // The profile's owner: its VMs go into the owner's project.
    expect([...ctx.sim.projects.values()].map((project) => project.name)).toEqual(['tcli-owner-alice'])
    expect(await rentsIn([], {TARGON_PROFILE: 'team'})).toEqual({org: 'acme-research', profile: 'team', sim: 'acme-research'})

    // In text mode, one line on stderr says where a command acts.
    const text = await targon(['status', '--profile', 'team'])
    expect(text.code).toBe(0)
    expect(text.stderr).toContain('org: acme-research (profile: team)\n')

    const use = await targon(['config', 'use', 'team', '--json'])
    expect(parseJson(use).data).toMatchObject({profile: 'team', profiles: ['default', 'team']})
    expect(await rentsIn([])).toEqual({org: 'acme-research', profile: 'team', sim: 'acme-research'})
    expect(parseJson(await targon(['config', 'list', '--json'])).data).toMatchObject({
      active: {by: 'targon config use', name: 'team'},
      profile: 'team',
      values: {api_key: '********_key', org: 'acme-research'},
    })
    expect(parseJson(await targon(['config', 'list', '--profile', 'default', '--json'])).data.values.org).toBeNull()
    expect((await targon(['config', 'list', '--profile', 'default'])).stderr).toContain(
      'profile: default (runs use team, as targon config use chose it); other profiles: team\n',
    )
    expect((await targon(['config', 'list'])).stderr).toContain(
      'profile: team (runs use it, as targon config use chose it); other profiles: default\n',
    )

    // A cron line with its own key and no profile acts where it did before config use.
    const cron = parseJson(await targon(['status', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_test_key'}}))
    expect({org: cron.org, profile: cron.profile}).toEqual({org: 'acme', profile: 'default'})

    // A named profile decides over TARGON_ORG; a different key in the environment is refused, naming both sources.
    expect(await rentsIn(['--profile', 'team'], {TARGON_ORG: 'acme'})).toMatchObject({sim: 'acme-research'})
    const mixed = await targon(['status', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_test_key', TARGON_PROFILE: 'team'}})
    expect(mixed.code).toBe(3)
    expect(parseJson(mixed).error.message).toBe('TARGON_API_KEY differs from the api-key of profile team (chosen by TARGON_PROFILE)')
    const same = await targon(['status', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_team_key', TARGON_PROFILE: 'team'}})
    expect(same.code).toBe(0)

    const missing = await targon(['status', '--profile', 'nosuch', '--json'])
    expect(missing.code).toBe(3)
    expect(parseJson(missing).error.message).toBe('there is no profile nosuch (named by --profile)')
    expect(parseJson(await targon(['offers', '--json']))).toMatchObject({org: null, profile: null})

    // Removing the chosen profile goes back to the default one.
    expect(parseJson(await targon(['config', 'remove', 'team', '--json'])).data.profiles).toEqual(['default'])
    expect(await rentsIn([])).toEqual({org: 'acme', profile: 'default', sim: 'acme'})
    expect((await targon(['config', 'remove', 'default', '--json'])).code).toBe(2)
    expect((await targon(['config', 'use', 'team', '--json'])).code).toBe(2)

    expect((await targon(['down', '--all', '--json'])).code).toBe(0)
    expect((await targon(['down', '--all', '--org', 'acme-research', '--json'], {env: {TARGON_API_KEY: 'tgn_sim_team_key'}})).code).toBe(0)
    expect(ctx.sim.billing()).toEqual([])
  })
})
