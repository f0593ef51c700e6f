import {afterEach, describe, expect, it} from 'vitest'

import {TargonClient} from '../../src/lib/adapters/targon/client.js'
import {parseRetryAfter} from '../../src/lib/adapters/targon/http.js'
import type {CreateWorkloadRequest} from '../../src/lib/adapters/targon/schemas.js'
import {TargonError} from '../../src/lib/core/errors.js'
import {startSimulator} from '../helpers/simulator.js'
import {DEFAULT_TOKEN, type SimulatorOptions, type TargonSimulator} from '../simulator/simulator.js'

let sim: TargonSimulator | undefined
let client: TargonClient | undefined

afterEach(async () => {
  await client?.close()
  await sim?.stop()
  sim = undefined
  client = undefined
})

async function setup(options: SimulatorOptions = {}, token = DEFAULT_TOKEN) {
  sim = await startSimulator(options)
  client = new TargonClient({baseUrl: sim.url, retryBaseMs: 5, token})
  return {client, sim}
}

async function failure(promise: Promise<unknown>): Promise<TargonError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(TargonError)
  return error as TargonError
}

const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk8hW1WvWq0cJ8q6yG7Yb8kQ2m4Zx3n5p7r9t1v3x5z test'

/** The body of a VM create, as up sends it. */
const vmRequest = (name: string, sshKeyUid: string): CreateWorkloadRequest => ({
  image: 'ubuntu-24-04-lts-595',
  name,
  resource_name: 'rtx6000b-small',
  ssh_keys: [sshKeyUid],
  type: 'VM',
  vm_config: {password: 'secret-password'},
})

describe('TargonClient', () => {
  it('follows cursors over small pages, whether the end is null or ""', async () => {
    for (const emptyCursor of [false, true]) {
      const {client, sim} = await setup({emptyCursor, maxPageSize: 2})
      for (let index = 0; index < 5; index++) sim.addWorkload({name: `w${index}`})
      const {workloads} = await client.listWorkloads('acme')
      expect(workloads.map((workload) => workload.name).sort()).toEqual(['w0', 'w1', 'w2', 'w3', 'w4'])
      expect(sim.requests('GET', '/workloads')).toHaveLength(3)
      await client.close()
      await sim.stop()
    }

    client = undefined
    sim = undefined
  })

  it('accepts a bare array where a page is expected, and {items} where a bare array is expected', async () => {
    const {client, sim} = await setup()
    sim.inject({body: JSON.stringify([{slug: 'acme'}]), path: '/tha/v3/orgs', status: 200, times: 1})
    expect(await client.listOrgs()).toEqual([{slug: 'acme'}])
    sim.inject({body: JSON.stringify({items: [{name: 'img-1'}]}), path: 'vm-images', status: 200})
    expect(await client.listVmImages('acme')).toEqual([{name: 'img-1'}])
  })

  it('stops on a repeated cursor instead of looping', async () => {
    const {client, sim} = await setup()
    sim.inject({body: JSON.stringify({items: [{slug: 'acme'}], next_cursor: 'same'}), path: '/tha/v3/orgs', status: 200})
    const error = await failure(client.listOrgs())
    expect(error.code).toBe('BAD_RESPONSE')
  })

  it('tolerates sparse create and deploy answers and unknown statuses', async () => {
    const {client, sim} = await setup({extraFields: true, sparse: true})
    const key = await client.createSshKey('acme', {name: 'k', ssh_key: sshKey})
    const created = await client.createWorkload('acme', vmRequest('tcli-default-a1', key.uid))
    expect(created.uid).toMatch(/^wrk-/)
    expect(created.name).toBeUndefined()
    expect(await client.deployWorkload('acme', created.uid as string)).toEqual({})
    sim.inject({body: JSON.stringify({status: 'frozen', x: 1}), path: '/state', status: 200, times: 1})
    expect((await client.getWorkloadState('acme', created.uid as string)).status).toBe('frozen')
  })

  it('maps HTTP errors to typed errors with status, reason and request id', async () => {
    const {client, sim} = await setup({}, 'wrong-key')
    const auth = await failure(client.listOrgs())
    expect(auth).toMatchObject({code: 'AUTH', httpStatus: 401, reason: 'UNAUTHORIZED'})
    expect(auth.requestId).toMatch(/^req-/)
    expect(auth.exitCode).toBe(3)

    const anonymous = new TargonClient({baseUrl: sim.url, token: DEFAULT_TOKEN})
    const missing = await failure(anonymous.getWorkload('acme', 'wrk-nope'))
    expect(missing).toMatchObject({code: 'NOT_FOUND', httpStatus: 404})
    const forbidden = await failure(anonymous.listWorkloads('acme-research'))
    expect(forbidden).toMatchObject({code: 'AUTH', httpStatus: 403})
    await anonymous.close()
  })

  it('retries GETs on 5xx and 429 honouring Retry-After, but never retries a create POST', async () => {
    const {client, sim} = await setup()
    sim.inject({path: '/tha/v3/orgs', retryAfter: '0', status: 429, times: 2})
    sim.inject({path: '/tha/v3/orgs', status: 500, times: 1})
    expect(await client.listOrgs()).toHaveLength(1)
    expect(sim.requests('GET', '/tha/v3/orgs')).toHaveLength(4)

    sim.inject({method: 'POST', path: '/ssh-keys', status: 503, times: 1})
    const error = await failure(client.createSshKey('acme', {name: 'k', ssh_key: sshKey}))
    expect(error).toMatchObject({code: 'API_ERROR', httpStatus: 503})
    expect(sim.requests('POST', '/ssh-keys')).toHaveLength(1)
  })

  it('reports a dropped connection after a committed create as a network error, with no second POST', async () => {
    const {client, sim} = await setup()
    const key = await client.createSshKey('acme', {name: 'k', ssh_key: sshKey})
    sim.inject({dropAfterCommit: true, method: 'POST', path: /\/workloads$/, times: 1})
    const error = await failure(client.createWorkload('acme', vmRequest('tcli-default-lost', key.uid)))
    expect(error.code).toBe('NETWORK_ERROR')
    expect(sim.requests('POST', /\/workloads$/)).toHaveLength(1)
    expect(sim.live().map((workload) => workload.name)).toEqual(['tcli-default-lost'])
  })

  it('names the endpoint for malformed JSON and never leaks the API key', async () => {
    const {client, sim} = await setup()
    sim.inject({body: '{"items": [', path: '/tha/v3/orgs', status: 200})
    const error = await failure(client.listOrgs())
    expect(error.code).toBe('BAD_RESPONSE')
    expect(error.message).toContain('GET /tha/v3/orgs')
    expect(JSON.stringify({...error, message: error.message})).not.toContain(DEFAULT_TOKEN)
  })

  it('rejects a request body with unknown fields before sending it', async () => {
    const {client, sim} = await setup()
    const body = {image: 'i', name: 'n', resource_name: 'r', ssh_keys: [], type: 'VM', vm_config: {password: 'pass'}, ttl: 5}
    await expect(client.createWorkload('acme', body as never)).rejects.toThrow()
    expect(sim.requests('POST', '/workloads')).toHaveLength(0)
  })
})

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('2')).toBe(2000)
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4000)).toBe(6000)
    expect(parseRetryAfter('soon')).toBeUndefined()
    expect(parseRetryAfter(undefined)).toBeUndefined()
  })
})
