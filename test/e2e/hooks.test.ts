/**
 * Pre-delete hooks on simulated VMs (real sshd, real bash, real sudo): up --on-delete stores the hook on the VM,
 * private to root; down and sweep run it there as ubuntu before the deletion, with the VM's name, uid and the reason
 * in its environment, and report its exit code, duration and last output lines; --dry-run and --no-hooks run none.
 */
import {readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {parseJson, tempDir, waitFor} from '../helpers/cli.js'
import {setTtl} from '../helpers/records.js'
import {parseEvents} from '../helpers/events.js'
import {useVmFixture} from '../helpers/fixture.js'
import {HOOK_PATH, useWebhook} from '../helpers/webhook.js'

const ENV = {TARGON_SHIM_HEALTH_TIMEOUT: '4'}
const simulated = useVmFixture({inProcess: true, env: ENV})
const webhook = useWebhook()
const {configDir, targon} = simulated
const CONF = '/etc/targon-fleet/on-delete.conf'

/** Prints 30 numbered lines (more than the tail keeps), then writes a file in ubuntu's home and prints it with its user. */
const SAVING_HOOK =
  'for i in $(seq 1 30); do echo "line $i <!channel>"; done; echo "$TARGON_DELETE_REASON $TARGON_VM_NAME $TARGON_VM_UID" > ~/saved && echo "saved as $(id -un): $(cat ~/saved)"'

async function upWith(...extra: string[]): Promise<{name: string; uid: string}> {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', ...extra], {timeoutMs: 120_000})
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

const billing = () => new Set(simulated.sim.billing().map((workload) => workload.uid))

/** The hook outcomes in an events file: the deletion events that carry one, by VM uid. */
function hookEvents(file: string) {
  return parseEvents(readFileSync(file, 'utf8'))
    .filter((event) => event.hook !== null)
    .map((event) => ({hook: event.hook, status: event.status, type: event.type, uid: event.vm?.uid}))
}

/**
 * Runs `check` while the simulator holds the VM's DELETE (a hook runs before it, and the VM's files go with it), then
 * lets the deletion finish: what `run` resolves to.
 */
async function atDelete<T>(uid: string, run: Promise<T>, check: () => void): Promise<T> {
  let release = () => {}
  simulated.sim.inject({
    holdUntil: new Promise<void>((resolve) => (release = resolve)),
    method: 'DELETE',
    path: `/workloads/${uid}`,
    times: 1,
  })
  try {
    await waitFor(() => simulated.sim.requests('DELETE', `/workloads/${uid}`).length === 1)
    check()
  } finally {
    release()
  }
  return run
}

/** Rewrites the timeout stored with the hook on the VMs, as a VM that wants its hook to hold its deletion would. */
async function rewriteHookTimeout(vms: {name: string; uid: string}[], seconds: number): Promise<void> {
  const exec = await targon([
    'exec',
    '--vms',
    vms.map((vm) => vm.name).join(','),
    '--',
    `sudo -n sed -i 's/"timeout_s":[0-9]*/"timeout_s":${seconds}/' ${CONF}`,
  ])
  expect(exec.code, exec.stdout + exec.stderr).toBe(0)
  for (const vm of vms) expect(JSON.parse(simulated.farm.vm(vm.uid).readFile(CONF)).timeout_s).toBe(seconds)
}

afterAll(async () => {
  await targon(['down', '--all', '--yes', '--no-hooks'])
})

describe('pre-delete hooks', () => {
  it('down runs the hook on the VM as ubuntu, then deletes it; the tail is in --json', async () => {
    const vm = await upWith('--on-delete', SAVING_HOOK, '--hook-timeout', '1m')
    const sim = simulated.farm.vm(vm.uid)
    // Stored private to root, with the command and its timeout.
    expect(JSON.parse(sim.readFile(CONF))).toEqual({command: SAVING_HOOK, timeout_s: 60})
    expect(statSync(join(sim.dir, 'upper', CONF)).mode & 0o777).toBe(0o600)

    const dry = await targon(['down', vm.name, '--dry-run', '--json'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(parseJson(dry).data.results[0].hook).toBeUndefined()
    expect(sim.hasFile('/home/ubuntu/saved')).toBe(false)

    const events = join(tempDir('targon-hook-events-'), 'down.ndjson')
    const down = await targon(['down', vm.name, '--json', '--events-file', events], {env: {TARGON_NOTIFY_URL: webhook.url}})
    expect(down.code, down.stdout + down.stderr).toBe(0)
    const [result] = parseJson(down).data.results
    expect(result).toMatchObject({action: 'deleted', billing: false, uid: vm.uid})
    expect(result.hook).toMatchObject({detail: null, exit_code: 0, status: 'ok'})
    // The events carry the same outcome as a typed field of the deletion's progress event.
    expect(hookEvents(events)).toEqual([{hook: result.hook, status: 'progress', type: 'deletion', uid: vm.uid}])
    expect(result.hook.duration_ms).toBeGreaterThanOrEqual(0)
    const tail = result.hook.output_tail.split('\n')
    expect(tail).toHaveLength(20)
    expect(tail[0]).toBe('line 12 <!channel>')
    expect(tail.at(-1)).toBe(`saved as ubuntu: down ${vm.name} ${vm.uid}`)
    expect(billing().has(vm.uid)).toBe(false)
  })

  it('a VM without a hook is deleted at once, without waiting for the slow hook of another VM', async () => {
    const slow = await upWith('--on-delete', 'sleep 4; echo "ended $(date +%s%3N)"')
    const plain = await upWith()
    const down = await targon(['down', slow.name, plain.name, '--json'])
    expect(down.code, down.stdout + down.stderr).toBe(0)
    const results = parseJson(down).data.results
    expect(results.map((each: {uid: string; action: string}) => `${each.uid} ${each.action}`).sort()).toEqual(
      [`${slow.uid} deleted`, `${plain.uid} deleted`].sort(),
    )
    const hooked = results.find((each: {uid: string}) => each.uid === slow.uid)
    expect(hooked.hook).toMatchObject({exit_code: 0, status: 'ok'})
    const hookEnded = Number(/ended (\d+)/.exec(hooked.hook.output_tail)?.[1])
    const deleteAt = (uid: string) =>
      simulated.sim.log.find((each) => each.method === 'DELETE' && each.path.endsWith(`/workloads/${uid}`))?.at ?? Number.NaN
    // The plain VM's DELETE went out while the hook still slept; the hooked VM's only after its hook ended.
    expect(deleteAt(plain.uid)).toBeLessThan(hookEnded)
    expect(deleteAt(slow.uid)).toBeGreaterThanOrEqual(hookEnded)
    expect(billing().has(slow.uid) || billing().has(plain.uid)).toBe(false)
  })

  it('sweep runs the hook of a VM past its TTL with reason ttl; --no-hooks deletes without it', async () => {
    const ttl = await upWith('--ttl', '1h', '--on-delete', 'echo "reason=$TARGON_DELETE_REASON"; exit 3')
    setTtl(configDir, ttl.name, Date.now() - 60_000)

    const events = join(tempDir('targon-hook-events-'), 'sweep.ndjson')
    const sweep = await targon(['sweep', '--json', '--events-file', events], {env: {TARGON_NOTIFY_URL: webhook.url}})
    // A failed hook is reported and changes no exit code.
    expect(sweep.code, sweep.stdout + sweep.stderr).toBe(0)
    const [result] = parseJson(sweep).data.results
    expect(result).toMatchObject({action: 'deleted', billing: false, reason: 'ttl', uid: ttl.uid})
    expect(result.hook).toMatchObject({exit_code: 3, output_tail: 'reason=ttl', status: 'failed'})
    expect(hookEvents(events)).toEqual([{hook: result.hook, status: 'progress', type: 'deletion', uid: ttl.uid}])
    expect(parseJson(sweep).warnings.join('\n')).toContain(`${ttl.name}: hook failed after`)
    const text = webhook.received.filter((each) => each.path === HOOK_PATH).at(-1)?.body.text as string
    expect(text).toContain(`${ttl.name} (ttl)`)
    expect(text).toContain('reason=ttl')
    expect(billing().has(ttl.uid)).toBe(false)

    const quiet = await upWith('--ttl', '1h', '--on-delete', 'touch ~/ran')
    const vm = simulated.farm.vm(quiet.uid)
    // A dry sweep plans its deletion and runs no hook.
    setTtl(configDir, quiet.name, Date.now() - 60_000)
    const dry = await targon(['sweep', '--dry-run', '--json'])
    expect(dry.code, dry.stdout + dry.stderr).toBe(0)
    expect(parseJson(dry).data.results).toMatchObject([{reason: 'ttl', uid: quiet.uid}])
    expect(parseJson(dry).data.results[0]).not.toHaveProperty('hook')
    expect(vm.hasFile('/home/ubuntu/ran')).toBe(false)
    const down = await atDelete(quiet.uid, targon(['down', quiet.name, '--no-hooks', '--json']), () =>
      expect(vm.hasFile('/home/ubuntu/ran')).toBe(false),
    )
    expect(down.code, down.stderr).toBe(0)
    expect(parseJson(down).data.results[0]).not.toHaveProperty('hook')
    expect(billing().has(quiet.uid)).toBe(false)
  })

  it('down from a directory without the VM record deletes it without a hook, and says the hook is unknown here', async () => {
    const vm = await upWith('--on-delete', 'touch ~/ran')
    const elsewhere = tempDir('targon-elsewhere-')
    const onVm = simulated.farm.vm(vm.uid)
    const down = await atDelete(vm.uid, targon(['down', vm.uid, '--json'], {env: {TARGON_CONFIG_DIR: elsewhere}}), () =>
      expect(onVm.hasFile('/home/ubuntu/ran')).toBe(false),
    )
    expect(down.code, down.stdout + down.stderr).toBe(0)
    const [result] = parseJson(down).data.results
    expect(result).toMatchObject({action: 'deleted', billing: false, hook: {status: 'unknown-here'}, uid: vm.uid})
    expect(parseJson(down).warnings.join('\n')).toContain('any pre-delete hook is not known here and is not run')
    expect(billing().has(vm.uid)).toBe(false)
  })

  it("a VM that rewrote its hook's timeout to a day is stopped at the one kept here, or at down --hook-timeout", async () => {
    const kept = await upWith('--on-delete', 'echo saving; sleep 600', '--hook-timeout', '2s')
    const given = await upWith('--on-delete', 'echo saving; sleep 600', '--hook-timeout', '1h')
    await rewriteHookTimeout([kept, given], 86_400)

    for (const [vm, extra] of [
      [kept, []],
      [given, ['--hook-timeout', '2s']],
    ] as const) {
      const startedAt = Date.now()
      const down = await targon(['down', vm.name, '--json', ...extra], {timeoutMs: 40_000})
      expect(down.code, down.stdout + down.stderr).toBe(0)
      expect(Date.now() - startedAt).toBeLessThan(30_000)
      expect(parseJson(down).data.results[0]).toMatchObject({
        action: 'deleted',
        billing: false,
        hook: {detail: 'did not end within its timeout of 2 s', output_tail: 'saving', status: 'timed-out'},
        uid: vm.uid,
      })
      expect(billing().has(vm.uid)).toBe(false)
    }
  }, 120_000)

  it('an adopting up keeps the hook unless given one; --on-delete "" removes it', async () => {
    const vm = await upWith('--on-delete', 'echo first')
    const sim = simulated.farm.vm(vm.uid)
    await upWith('--name', vm.name)
    expect(JSON.parse(sim.readFile(CONF)).command).toBe('echo first')
    await upWith('--name', vm.name, '--on-delete', '')
    expect(sim.hasFile(CONF)).toBe(false)
    const down = await targon(['down', vm.name, '--json'])
    expect(down.code, down.stderr).toBe(0)
    expect(parseJson(down).data.results[0]).not.toHaveProperty('hook')
  })
})
