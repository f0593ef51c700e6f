/**
 * The dstack double (test/dstack/) keeps dstack 0.21.2's rules, over plain HTTP: auth and its error shapes, the
 * plan/apply handshake, busy fleets, the in-place update rules (a changed port or key), hostnames held by another
 * fleet or shared inside one, hosts with a running job, and runs that wait for capacity.
 */
import ssh2 from 'ssh2'
import {afterEach, describe, expect, it} from 'vitest'

import {DSTACK_TOKEN, startDstack} from '../helpers/dstack.js'
import {fakeClock} from '../helpers/fake-clock.js'
import type {DstackSimulator, DstackSimulatorOptions} from '../dstack/simulator.js'

const KEY = ssh2.utils.generateKeyPairSync('ed25519')

let dstack: DstackSimulator | undefined

afterEach(async () => {
  await dstack?.stop()
  dstack = undefined
})

async function setup(options: DstackSimulatorOptions = {}): Promise<DstackSimulator> {
  dstack = await startDstack(options)
  return dstack
}

interface Answer {
  status: number
  body: any
}

async function post(path: string, body?: unknown, token: string | null = DSTACK_TOKEN): Promise<Answer> {
  const response = await fetch(`${dstack?.url}${path}`, {
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: {'content-type': 'application/json', ...(token === null ? {} : {authorization: `Bearer ${token}`})},
    method: 'POST',
  })
  return {body: await response.json(), status: response.status}
}

const fleets = (action: string, body?: unknown) => post(`/api/project/main/fleets/${action}`, body)

type Host = Record<string, unknown> | string

/** An SSH fleet's spec, as a client sends it: the key itself, not a path. */
function fleetSpec(name: string, hosts: Host[], privateKey = KEY.private): Record<string, unknown> {
  return {
    configuration: {name, ssh_config: {hosts, ssh_key: {private: privateKey, public: KEY.public}, user: 'ubuntu'}, type: 'fleet'},
    profile: {name: 'default'},
  }
}

/** get_plan, then apply with the plan's spec and current_resource: the handshake. */
async function sync(name: string, hosts: Host[], privateKey?: string): Promise<Answer> {
  const plan = await fleets('get_plan', {spec: fleetSpec(name, hosts, privateKey)})
  if (plan.status !== 200) return plan
  return fleets('apply', {force: false, plan: {current_resource: plan.body.current_resource, spec: plan.body.spec}})
}

const refusal = (msg: string, code = 'error') => ({detail: [{code, msg}]})

describe('auth and errors', () => {
  it('answers as dstack for no token, a bad token, an unknown project, route or method', async () => {
    await setup()
    const none = await post('/api/project/main/fleets/list', {}, null)
    expect(none).toEqual({body: {detail: 'Not authenticated'}, status: 401})
    expect(await post('/api/project/main/fleets/list', {}, 'wrong')).toEqual({
      body: {detail: {code: null, msg: 'Invalid token'}},
      status: 403,
    })
    expect(await post('/api/project/other/fleets/list', {})).toEqual({body: {detail: {code: null, msg: 'Not found'}}, status: 404})
    expect(await post('/api/project/main/fleets/nothing', {})).toEqual({body: {detail: 'Not Found'}, status: 404})
    // runs/list is not per project in dstack: it is /api/runs/list with project_name.
    expect((await post('/api/project/main/runs/list', {})).status).toBe(404)
    const get = await fetch(`${dstack?.url}/api/project/main/fleets/list`, {headers: {authorization: `Bearer ${DSTACK_TOKEN}`}})
    expect(get.status).toBe(405)
    expect(await fleets('get', {name: 'absent'})).toEqual({body: refusal('Resource not found', 'resource_not_exists'), status: 400})
    // The token check's answer holds the token itself: a client must never log it.
    expect((await post('/api/users/get_my_user', {})).body).toMatchObject({creds: {token: DSTACK_TOKEN}, username: 'admin'})
  })

  it('refuses unknown fields and missing ones with FastAPI 422 answers', async () => {
    await setup()
    const plan = await fleets('get_plan', {spec: fleetSpec('f1', ['203.0.113.10'])})
    const extra = await fleets('apply', {force: false, plan: {...plan.body, effective_spec: plan.body.effective_spec}})
    expect(extra.status).toBe(422)
    expect(extra.body.detail.map((issue: {loc: string[]}) => issue.loc.join('.'))).toContain('body.plan.effective_spec')
    const missing = await fleets('apply', {plan: {current_resource: null, spec: plan.body.spec}})
    expect(missing.body.detail).toEqual([expect.objectContaining({loc: ['body', 'force'], type: 'missing'})])
    const typo = await fleets('get_plan', {spec: {...fleetSpec('f1', [{hostname: '203.0.113.10', prot: 22}])}})
    expect(typo.body.detail[0]).toMatchObject({
      loc: ['body', 'spec', 'configuration', 'ssh_config', 'hosts', 0, 'prot'],
      type: 'extra_forbidden',
    })
  })
})

describe('the plan/apply handshake', () => {
  it('creates a fleet, adds and removes hosts in place, and never answers a key', async () => {
    const sim = await setup()
    const plan = await fleets('get_plan', {spec: fleetSpec('f1', [{hostname: '203.0.113.10', port: 40001}])})
    expect(plan.body).toMatchObject({action: 'create', current_resource: null, offers: [], total_offers: 0})
    // The plan echoes the spec as sent, key included; only effective_spec is stripped.
    expect(plan.body.spec.configuration.ssh_config.ssh_key.private).toBe(KEY.private)
    expect(plan.body.effective_spec.configuration.ssh_config.ssh_key).toBeNull()

    const created = await fleets('apply', {force: false, plan: {current_resource: null, spec: plan.body.spec}})
    expect(created.status).toBe(200)
    expect(created.body.spec.configuration.ssh_config.ssh_key).toBeNull()
    expect(created.body.instances).toEqual([
      expect.objectContaining({backend: 'remote', hostname: '203.0.113.10', instance_num: 0, status: 'pending'}),
    ])
    expect(sim.hosts('f1')).toEqual([expect.objectContaining({hostname: '203.0.113.10', port: 40001, status: 'idle'})])

    const grown = await sync('f1', [
      {hostname: '203.0.113.10', port: 40001},
      {hostname: '203.0.113.11', port: 40002},
    ])
    expect(grown.body.instances.map((instance: {instance_num: number}) => instance.instance_num)).toEqual([0, 1])
    const shrunk = await sync('f1', [{hostname: '203.0.113.11', port: 40002}])
    // The removed host is terminating in the answer and gone once dstack has ended it.
    expect(shrunk.body.instances).toEqual([
      expect.objectContaining({hostname: '203.0.113.10', status: 'terminating'}),
      expect.objectContaining({hostname: '203.0.113.11'}),
    ])
    expect(sim.hosts('f1').map((host) => host.hostname)).toEqual(['203.0.113.11'])
    // A new host takes the lowest free number.
    const again = await sync('f1', [
      {hostname: '203.0.113.11', port: 40002},
      {hostname: '203.0.113.12', port: 40003},
    ])
    expect(
      again.body.instances.map((instance: {hostname: string; instance_num: number}) => [instance.hostname, instance.instance_num]),
    ).toEqual([
      ['203.0.113.12', 0],
      ['203.0.113.11', 1],
    ])
  })

  it('refuses an apply whose plan no longer matches the fleet, unless forced', async () => {
    const sim = await setup()
    await sync('f1', ['203.0.113.10'])
    const stale = await fleets('get_plan', {spec: fleetSpec('f1', ['203.0.113.10', '203.0.113.11'])})
    expect(stale.body.action).toBe('update')
    // Somebody else changes the fleet between the plan and the apply.
    expect((await sync('f1', ['203.0.113.10', '203.0.113.12'])).status).toBe(200)
    const changed = refusal('Failed to apply plan. Resource has been changed. Try again or use force apply.')
    const apply = (current: unknown, force = false) => fleets('apply', {force, plan: {current_resource: current, spec: stale.body.spec}})
    expect(await apply(stale.body.current_resource)).toEqual({body: changed, status: 400})
    expect(await apply(null)).toEqual({body: changed, status: 400})
    expect((await apply(null, true)).status).toBe(200)
    expect(sim.hosts('f1').map((host) => host.hostname)).toEqual(['203.0.113.10', '203.0.113.11'])
  })

  it('refuses any change but the host list: a new key is a change of fields', async () => {
    await setup()
    await sync('f1', ['203.0.113.10'])
    const other = ssh2.utils.generateKeyPairSync('ed25519').private
    expect(await sync('f1', ['203.0.113.10'], other)).toEqual({
      body: refusal("Failed to update fields ['ssh_key']. Can only update ['hosts']."),
      status: 400,
    })
    // The same key without its final newline is another key.
    expect((await sync('f1', ['203.0.113.10'], KEY.private.trimEnd())).status).toBe(400)
    expect(await sync('f1', ['203.0.113.10'], 'not a key')).toEqual({
      body: refusal('Unsupported key type. The key type should be RSA, ECDSA, or Ed25519 and should not be encrypted with passphrase.'),
      status: 400,
    })
  })
})

describe('busy fleets', () => {
  it('refuses an apply while dstack processes the fleet, without waiting', async () => {
    const sim = await setup()
    await sync('f1', ['203.0.113.10'])
    sim.processFleet('f1', {requests: 3})
    const busy = refusal('Failed to update fleet: fleet is being processed currently. Try again later.')
    for (let attempt = 0; attempt < 3; attempt++)
      expect(await sync('f1', ['203.0.113.10', '203.0.113.11'])).toEqual({body: busy, status: 400})
    expect((await sync('f1', ['203.0.113.10', '203.0.113.11'])).status).toBe(200)
  })

  it('makes the delete calls wait for the fleet, then refuse', async () => {
    // dstack's own waits (10 tries, 0.5 s apart), on a fake clock.
    const clock = fakeClock(1_800_000_000_000)
    const sim = await setup({clock})
    await sync('f1', ['203.0.113.10', '203.0.113.11'])
    sim.processFleet('f1')
    const before = clock.now()
    expect(await fleets('delete_instances', {instance_nums: [1], name: 'f1'})).toEqual({
      body: refusal('Failed to delete fleet instances: fleets are being processed currently. Try again later.'),
      status: 400,
    })
    expect(clock.now() - before).toBe(4500)
    sim.processFleet('f1', {what: 'instances'})
    expect((await fleets('delete', {names: ['f1']})).body).toEqual(
      refusal('Failed to delete fleets: fleet instances are being processed currently. Try again later.'),
    )
    // A lock that ends while the call waits lets it through.
    sim.processFleet('f1', {forMs: 2000})
    expect(await fleets('delete_instances', {instance_nums: [1], name: 'f1'})).toEqual({body: null, status: 200})
    expect(sim.hosts('f1').map((host) => host.hostname)).toEqual(['203.0.113.10'])
  })
})

describe('hostnames', () => {
  it('refuses a changed port on the same hostname: remove, then add', async () => {
    const sim = await setup()
    await sync('f1', [{hostname: '203.0.113.12', port: 40001}])
    const plan = await fleets('get_plan', {spec: fleetSpec('f1', [{hostname: '203.0.113.12', port: 40009}])})
    expect(plan.body.action).toBe('create')
    const refused = await fleets('apply', {force: false, plan: {current_resource: plan.body.current_resource, spec: plan.body.spec}})
    expect(refused).toEqual({body: refusal("Hosts configuration changed, cannot update: ['203.0.113.12']"), status: 400})
    expect((await sync('f1', [])).status).toBe(200)
    expect((await sync('f1', [{hostname: '203.0.113.12', port: 40009}])).status).toBe(200)
    expect(sim.hosts('f1')).toEqual([expect.objectContaining({hostname: '203.0.113.12', port: 40009})])
  })

  it('refuses a hostname that another fleet holds, in the plan and when hosts are added', async () => {
    await setup()
    await sync('f1', ['203.0.113.10'])
    await sync('f2', ['203.0.113.20'])
    const taken = refusal('Instances [203.0.113.10] are already assigned to a fleet.')
    expect(await fleets('get_plan', {spec: fleetSpec('f2', ['203.0.113.20', '203.0.113.10'])})).toEqual({body: taken, status: 400})
    const current = (await fleets('get', {name: 'f2'})).body
    const spec = fleetSpec('f2', ['203.0.113.20', '203.0.113.10'])
    expect(await fleets('apply', {force: false, plan: {current_resource: current, spec}})).toEqual({body: taken, status: 400})
    // An apply that creates a fleet checks nothing: dstack only checks in the plan and when adding hosts.
    const created = await fleets('apply', {force: false, plan: {current_resource: null, spec: fleetSpec('f3', ['203.0.113.10'])}})
    expect(created.status).toBe(200)
  })

  it('keys hosts by hostname: two hosts on one IP make a fleet that refuses later changes', async () => {
    const sim = await setup()
    const shared = [
      {hostname: '203.0.113.30', port: 40001},
      {hostname: '203.0.113.30', port: 40002},
    ]
    // Created with both: one instance per entry.
    expect((await sync('f1', shared)).body.instances).toHaveLength(2)
    // The same list again is no change; dropping either entry is a changed host, or nothing at all.
    expect((await sync('f1', shared)).status).toBe(200)
    expect(await sync('f1', [shared[0] as Host])).toEqual({
      body: refusal("Hosts configuration changed, cannot update: ['203.0.113.30']"),
      status: 400,
    })
    expect((await sync('f1', [shared[1] as Host])).status).toBe(200)
    expect(sim.hosts('f1')).toHaveLength(2)
    // Added to an existing fleet, the two entries are one instance.
    await sync('f2', ['203.0.113.40'])
    const added = await sync('f2', ['203.0.113.40', {hostname: '203.0.113.41', port: 40001}, {hostname: '203.0.113.41', port: 40002}])
    expect(added.body.instances.map((instance: {hostname: string}) => instance.hostname)).toEqual(['203.0.113.40', '203.0.113.41'])
  })

  it('keeps a host it cannot reach pending, and one it gave up on holds its hostname until removed', async () => {
    const sim = await setup({reachable: (host) => host.hostname !== '203.0.113.99'})
    await sync('f1', ['203.0.113.10', '203.0.113.99'])
    expect(sim.hosts('f1').map((host) => host.status)).toEqual(['idle', 'pending'])
    sim.failHost('f1', '203.0.113.99')
    expect((await fleets('get', {name: 'f1'})).body.instances[1]).toMatchObject({
      status: 'terminated',
      termination_reason: 'provisioning_timeout',
      termination_reason_message: 'Failed to add SSH instance in 600s',
    })
    expect((await fleets('get_plan', {spec: fleetSpec('f2', ['203.0.113.99'])})).status).toBe(400)
    // An apply without it deletes the terminated instance at once, which frees the hostname.
    await sync('f1', ['203.0.113.10'])
    expect((await fleets('get_plan', {spec: fleetSpec('f2', ['203.0.113.99'])})).status).toBe(200)
  })

  it('ends an instance with delete_instances but keeps its host in the spec', async () => {
    const sim = await setup()
    await sync('f1', ['203.0.113.10', '203.0.113.11'])
    expect((await fleets('delete_instances', {instance_nums: [0], name: 'f1'})).status).toBe(200)
    expect((await sync('f1', ['203.0.113.10', '203.0.113.11'])).status).toBe(200)
    expect(sim.hosts('f1').map((host) => host.hostname)).toEqual(['203.0.113.11'])
  })
})

describe('hosts with a running job', () => {
  it('refuses to remove a busy host in every way, and lets it go once the run ends', async () => {
    const sim = await setup()
    await sync('f1', ['203.0.113.10', '203.0.113.11'])
    sim.submitRun({name: 'train'})
    sim.placeRun('train', {fleet: 'f1', hostname: '203.0.113.10'})
    expect(sim.hosts('f1')[0]).toMatchObject({busy: true, hostname: '203.0.113.10', status: 'busy'})
    const inUse = refusal('Failed to delete fleet f1 instances [0]. Fleet instances are in use.')
    expect(await fleets('delete_instances', {instance_nums: [0], name: 'f1'})).toEqual({body: inUse, status: 400})
    expect(await sync('f1', ['203.0.113.11'])).toEqual({body: inUse, status: 400})
    expect(await fleets('delete', {names: ['f1']})).toEqual({body: refusal('Failed to delete fleet f1. Fleet is in use.'), status: 400})
    // Nothing changed: the refused apply left the spec and both hosts.
    expect(sim.hosts('f1')).toHaveLength(2)
    expect((await sync('f1', ['203.0.113.10', '203.0.113.11'])).status).toBe(200)
    // The idle host goes; the busy one stays until its run ends.
    expect((await fleets('delete_instances', {instance_nums: [1], name: 'f1'})).status).toBe(200)
    sim.finishRun('train')
    expect(sim.hosts('f1')).toEqual([expect.objectContaining({busy: false, status: 'idle'})])
    expect((await fleets('delete', {names: ['f1']})).status).toBe(200)
    expect(await fleets('get', {name: 'f1'})).toEqual({body: refusal('Resource not found', 'resource_not_exists'), status: 400})
  })

  it('shows a terminating fleet until its instances are gone', async () => {
    const sim = await setup({terminateMs: 60_000})
    await sync('f1', ['203.0.113.10'])
    expect((await fleets('delete', {names: ['f1']})).status).toBe(200)
    expect((await fleets('get', {name: 'f1'})).body).toMatchObject({
      instances: [expect.objectContaining({status: 'terminating'})],
      status: 'terminating',
    })
    expect(sim.fleet('f1')?.status).toBe('terminating')
  })
})

describe('runs waiting for capacity', () => {
  const runs = (body: Record<string, unknown> = {}) => post('/api/runs/list', {only_active: true, project_name: 'main', ...body})

  it('lists a run that waits, as dstack reports it after a round without capacity', async () => {
    const sim = await setup()
    sim.submitRun({gpu: 'H100:2', name: 'train'})
    const [run] = (await runs()).body
    expect(run).toMatchObject({fleet: null, status: 'pending', status_message: 'retrying'})
    expect(run.run_spec.configuration.retry).toEqual({duration: 3600, on_events: ['no-capacity']})
    expect(run.jobs[0].job_spec.requirements.resources.gpu).toMatchObject({count: {max: 2, min: 2}, name: ['H100']})
    expect(run.latest_job_submission).toMatchObject({
      job_provisioning_data: null,
      status: 'failed',
      status_message: 'no fleets',
      termination_reason: 'failed_to_start_due_to_no_capacity',
    })
  })

  it('follows a run from submitted to running on a host, then out of the active list', async () => {
    const sim = await setup()
    await sync('f1', [{hostname: '203.0.113.10', port: 40001}])
    sim.submitRun({fleets: ['f1'], name: 'train', state: 'submitted'})
    expect((await runs()).body[0]).toMatchObject({
      latest_job_submission: {job_provisioning_data: null, status: 'submitted'},
      status: 'submitted',
    })
    sim.noCapacity('train')
    sim.resubmit('train')
    sim.noCapacity('train')
    sim.resubmit('train')
    // Older no-capacity submissions are dropped; the direct predecessor stays.
    const waiting = (await post('/api/project/main/runs/get', {run_name: 'train'})).body
    expect(
      waiting.jobs[0].job_submissions.map((job: {submission_num: number; status: string}) => [job.submission_num, job.status]),
    ).toEqual([
      [1, 'failed'],
      [2, 'submitted'],
    ])
    expect(waiting.status_message).toBe('retrying')
    expect(waiting.jobs[0].job_submissions[0].status_message).toBe('no capacity')
    sim.placeRun('train', {fleet: 'f1', hostname: '203.0.113.10'})
    const running = (await runs()).body[0]
    expect(running).toMatchObject({fleet: {name: 'f1'}, status: 'running'})
    expect(running.latest_job_submission.job_provisioning_data).toMatchObject({
      backend: 'remote',
      hostname: '203.0.113.10',
      ssh_port: 40001,
    })
    sim.finishRun('train')
    expect((await runs()).body).toEqual([])
    expect((await runs({only_active: false})).body[0]).toMatchObject({status: 'done', termination_reason: 'all_jobs_done'})
  })

  it('places a waiting run on the first idle host of a fleet it may use, when asked to schedule', async () => {
    const clock = fakeClock(1_800_000_000_000)
    const sim = await setup({clock, hostReadyMs: 30_000, placeWaitingRuns: true})
    await sync('other', ['203.0.113.20'])
    sim.submitRun({fleets: ['f1'], name: 'train'})
    await sync('f1', ['203.0.113.10'])
    // The host is still being deployed: the run waits.
    expect((await runs()).body[0]).toMatchObject({status: 'pending'})
    await clock.sleep(30_000)
    expect((await runs()).body[0]).toMatchObject({fleet: {name: 'f1'}, status: 'running'})
    expect(sim.hosts('f1')).toEqual([expect.objectContaining({busy: true, hostname: '203.0.113.10'})])
    expect(sim.hosts('other')).toEqual([expect.objectContaining({busy: false})])
  })

  it('fails a run without a retry policy instead of letting it wait', async () => {
    const sim = await setup()
    sim.submitRun({name: 'once', retrySeconds: null})
    expect((await runs()).body).toEqual([])
    expect(sim.run('once')?.status).toBe('failed')
  })
})

describe('trouble', () => {
  it('injects faults and replays chaos by seed', async () => {
    const sim = await setup()
    sim.inject({path: '/fleets/get_plan', status: 502, times: 1})
    expect((await fleets('get_plan', {spec: fleetSpec('f1', ['203.0.113.10'])})).status).toBe(502)
    expect((await sync('f1', ['203.0.113.10'])).status).toBe(200)
    sim.inject({dropAfterCommit: true, path: '/fleets/apply', times: 1})
    await expect(sync('f1', ['203.0.113.10', '203.0.113.11'])).rejects.toThrow()
    // The apply happened although the answer was lost.
    expect(sim.hosts('f1')).toHaveLength(2)
  })

  it('draws the same trouble for the same seed, and adds unknown fields on request', async () => {
    const statuses = async (options: DstackSimulatorOptions) => {
      await setup(options)
      const seen: (number | string)[] = []
      for (let attempt = 0; attempt < 12; attempt++)
        seen.push(
          await fleets('list', {}).then(
            (answer) => answer.status,
            () => 'reset',
          ),
        )
      await dstack?.stop()
      return seen
    }

    const first = await statuses({chaos: {rate: 0.5, seed: 7}})
    expect(first.some((status) => status !== 200)).toBe(true)
    expect(await statuses({chaos: {rate: 0.5, seed: 7}})).toEqual(first)
    await setup({extraFields: true})
    await sync('f1', ['203.0.113.10'])
    expect((await fleets('get', {name: 'f1'})).body.instances[0]).toHaveProperty('x_future_field')
  })
})
