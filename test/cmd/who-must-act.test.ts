/**
 * Each error envelope says who must act on it: the user for a usage error, Targon for an API failure that outlasted
 * its retries. (A bug's envelope: test/unit/who-must-act.test.ts, through the same mapper.)
 */
import {describe, expect, it} from 'vitest'

import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})
const {setup, targon} = ctx

describe('who must act', () => {
  it('a usage error is the user’s, with one line and no stack trace', async () => {
    await setup()
    const json = await targon(['status', '--bogus', '--json'])
    expect(json.code).toBe(2)
    expect(json.json.error).toMatchObject({code: 'USAGE', exit_code: 2, who_must_act: 'user'})

    const human = await targon(['status', '--bogus', '--verbose'])
    expect(human.code).toBe(2)
    expect(human.stderr.trim().split('\n')).toHaveLength(1)
    expect(human.stderr).not.toMatch(/\bat .*\.[jt]s:\d+/)
  })

  it('a 5xx of the API that outlasts its retries is Targon’s', async () => {
    await setup()
    ctx.sim.inject({method: 'GET', path: '/tha/v3/inventory', status: 503})
    const offers = await targon(['offers', '--json'])
    expect(offers.code).toBe(5)
    expect(offers.json.error).toMatchObject({code: 'API_ERROR', exit_code: 5, http_status: 503, who_must_act: 'targon'})
    expect(ctx.sim.requests('GET', '/tha/v3/inventory').length).toBeGreaterThan(1)
  })
})
