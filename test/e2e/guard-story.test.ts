/**
 * The guard's whole story for one VM, end to end on a simulated VM (real sshd, real bash, a real local receiver for
 * the notifications): warned once before its TTL fires, extended past that first deadline and kept, then deleted by
 * a later sweep after its pre-delete hook saved work on the VM, and nothing left billing. Time passes as the VM's
 * record says: a deadline is moved, never waited for.
 */
import {afterAll, describe, expect, it} from 'vitest'

import {parseJson, waitFor} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'
import {setTtl, ttlOf} from '../helpers/records.js'
import {HOOK_PATH, useWebhook} from '../helpers/webhook.js'

const simulated = useVmFixture({inProcess: true, env: () => ({TARGON_NOTIFY_URL: webhook.url, TARGON_SHIM_HEALTH_TIMEOUT: '4'})})
const {configDir, targon} = simulated
const webhook = useWebhook()
const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** Saves a checkpoint in ubuntu's home and prints it back, as a hook that saves work would. */
const SAVE_CHECKPOINT = 'echo "$TARGON_DELETE_REASON $TARGON_VM_NAME" > ~/checkpoint && echo "saved: $(cat ~/checkpoint)"'

/** The notifications of one event that the receiver got, in order. */
const notifications = (event: string) =>
  webhook.received.filter((each) => each.path === HOOK_PATH && each.body?.targon?.event === event).map((each) => each.body)
const billing = () => simulated.sim.billing().map((workload) => workload.uid)

async function sweep(...extra: string[]) {
  const result = await targon(['sweep', '--warn', '15m', '--json', ...extra])
  expect(result.code, result.stdout + result.stderr).toBe(0)
  return parseJson(result).data
}

afterAll(async () => {
  await targon(['down', '--all', '--yes', '--no-hooks'])
})

describe('the guard, from warning to deletion', () => {
  it('warns once, keeps the VM extended past its first deadline, deletes it after its hook saved work', async () => {
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--ttl', '1h', '--on-delete', SAVE_CHECKPOINT, '--json'], {
      timeoutMs: 120_000,
    })
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const vm: {name: string; uid: string} = parseJson(up).data.vms[0]

    // Ten minutes before the TTL fires: the first sweep warns, the second does not again; neither deletes.
    const firstDeadline = Date.now() + 10 * MINUTE
    setTtl(configDir, vm.name, firstDeadline)
    expect((await sweep()).warned).toMatchObject([{limit: 'ttl', uid: vm.uid}])
    const again = await sweep()
    expect(again.warned).toEqual([])
    expect(again.results).toEqual([])
    const [warning, ...more] = notifications('sweep-warning')
    expect(more).toEqual([])
    expect(warning.text).toContain(`${vm.name} will be deleted at `)
    expect(warning.text).toContain(`targon extend ${vm.name} --by 1h --ttl-only`)
    expect(billing()).toEqual([vm.uid])

    // Extended by an hour from that deadline. Twenty minutes later the first deadline lies ten minutes in the past,
    // the new one forty minutes ahead: the sweep keeps the VM, and has nothing new to warn about.
    const extend = await targon(['extend', vm.name, '--by', '1h', '--ttl-only', '--json'])
    expect(extend.code, extend.stdout + extend.stderr).toBe(0)
    expect(Date.parse(parseJson(extend).data.vms[0].ttl_expires_at)).toBe(firstDeadline + HOUR)
    expect(ttlOf(configDir, vm.name)).toBe(firstDeadline + HOUR)
    setTtl(configDir, vm.name, firstDeadline + HOUR - 20 * MINUTE)
    const kept = await sweep()
    expect(kept.results).toEqual([])
    expect(kept.warned).toEqual([])
    expect(billing()).toEqual([vm.uid])

    // The new deadline passes. The simulator holds the sweep's DELETE until the test has read, on the VM, the
    // checkpoint that the hook wrote before it.
    setTtl(configDir, vm.name, Date.now() - MINUTE)
    let release = () => {}
    simulated.sim.inject({
      holdUntil: new Promise<void>((resolve) => (release = resolve)),
      method: 'DELETE',
      path: `/workloads/${vm.uid}`,
      times: 1,
    })
    const deleting = sweep()
    let checkpoint: string
    try {
      await waitFor(() => simulated.sim.requests('DELETE', `/workloads/${vm.uid}`).length === 1, 60_000)
      checkpoint = simulated.farm.vm(vm.uid).readFile('/home/ubuntu/checkpoint')
    } finally {
      release()
    }
    expect(checkpoint).toBe(`ttl ${vm.name}\n`)
    const deleted = await deleting
    expect(deleted.results).toMatchObject([
      {
        action: 'deleted',
        billing: false,
        hook: {exit_code: 0, output_tail: `saved: ttl ${vm.name}`, status: 'ok'},
        reason: 'ttl',
        uid: vm.uid,
      },
    ])
    expect(deleted.survivors).toEqual([])
    const [notice, ...others] = notifications('sweep-deleted')
    expect(others).toEqual([])
    expect(notice.text).toContain(`${vm.name} (ttl)`)
    expect(notice.text).toContain(`saved: ttl ${vm.name}`)
    // One warning over the whole story, and nothing billing at its end.
    expect(notifications('sweep-warning')).toHaveLength(1)
    expect(billing()).toEqual([])
  }, 240_000)
})
