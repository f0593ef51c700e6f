/**
 * The fault matrix (run by the files of FAULT_MATRIX_FILES, by what each scenario needs): each scenario runs the CLI against the simulator (and simulated VMs
 * where SSH is involved) and asserts the exit code, the JSON envelope, and the simulator's
 * ledger: nothing billing afterwards (unless the scenario kept something with --on-failure keep), registered
 * leftovers only where the CLI names them, and never two DELETEs of one workload in flight.
 * RELIABILITY.md is generated from these scenarios (scripts/reliability.ts: npm run reliability).
 */
import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {afterEach, describe, expect, it} from 'vitest'

import {CONFIG_FILE_VARIANTS, type CliResult, parseJson, signalWhen, tempDir, waitFor, writeConfigFile} from '../helpers/cli.js'
import {fakeCrontab} from '../helpers/crontab.js'
import {DSTACK_TOKEN, startDstack} from '../helpers/dstack.js'
import {parseEvents} from '../helpers/events.js'
import {type Targon, targonFor} from '../helpers/fixture.js'
import {skippingClock} from '../helpers/fake-clock.js'
import type {DstackSimulator} from '../dstack/simulator.js'
import {DEFAULT_TOKEN, type SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'
import {PROJECT_KEY, dstackDeployScript} from '../vm/dstack-deploy.js'
import {VmFarm, type VmScenario} from '../vm/farm.js'

interface Context {
  sim: TargonSimulator
  farm: VmFarm
  configDir: string
  /** Runs targon with this scenario's simulator and config directory. */
  targon: Targon
}

interface Scenario {
  name: string
  sim?: SimulatorOptions
  vm?: VmScenario
  /** What runs; by default `up` of one VM with bootstrap. */
  run?: (ctx: Context) => Promise<CliResult>
  setup?: (ctx: Context) => void | Promise<void>
  exit: number
  /** The error code of the envelope, or null for success. */
  code: string | null
  /** Workloads deliberately left live (kept with --on-failure keep). */
  kept?: number
  /**
   * Whether workloads boot simulated VMs (real sshd hosts). By default only scenarios that bootstrap do (the default
   * run, or a `vm` scenario); others answer on 127.0.0.1:22 and never connect, which keeps the matrix fast.
   */
  vms?: boolean
  /** It sends the CLI a signal that the CLI handles: it runs twice, without and with a config.json. */
  interrupts?: boolean
  /**
   * Every run of it needs a process of the CLI's own (two runs at once, a spawn to watch), without simulated VMs. A
   * signalled run is a process anyway (the fixture's onSpawn).
   */
  process?: boolean
}

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--json']
/** The limits file a VM carries (adapters/bootstrap/vm-limits.ts). */
const LIMITS_FILE = '/etc/targon-fleet/limits.json'
const NO_BOOT = [...UP, '--no-bootstrap']
const upNoBoot = (ctx: Context, ...extra: string[]) => ctx.targon([...NO_BOOT, ...extra])

const vmCalls = (ctx: Context) => [...ctx.farm.vms.values()].flatMap((vm) => vm.calls())

/** One VM up (no bootstrap), its uid. */
async function oneVm(ctx: Context, ...extra: string[]): Promise<string> {
  const up = await upNoBoot(ctx, ...extra)
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0].uid as string
}

/** Whether a process whose command line matches runs on this machine (the simulated VMs' processes included). */
const running = (pattern: string) => {
  try {
    return execFileSync('pgrep', ['-f', pattern]).length > 0
  } catch {
    return false
  }
}

/** Runs up once, and checks that it created one workload whose deploys were answered `statuses`, in order. */
const deploysAnswered =
  (...statuses: number[]) =>
  async (ctx: Context): Promise<CliResult> => {
    const up = await upNoBoot(ctx)
    expect(ctx.sim.workloads.size).toBe(1)
    expect(ctx.sim.requests('POST', '/deploy').map((request) => request.status)).toEqual(statuses)
    return up
  }

/** A capacity refusal as the official SDK's tests show it (for sandboxes; the VM reason is inferred). */
const NO_CAPACITY_503 = {body: JSON.stringify({error: 'full', reason: 'WORKLOAD_VM_NO_CAPACITY'}), status: 503}

const deletesOf = (ctx: Context, uid?: string) => ctx.sim.requests('DELETE', uid ? `/workloads/${uid}` : /\/workloads\/[^/]+$/).length
/** Moves a VM's TTL into the past, in its local record (where targon keeps it), for targon sweep to find. */
function expireTtl(ctx: Context, uid: string): void {
  const file = join(ctx.configDir, 'vms', 'acme', `${ctx.sim.workloads.get(uid)!.name}.json`)
  writeFileSync(
    file,
    JSON.stringify({...JSON.parse(readFileSync(file, 'utf8')), ttl_expires_at: new Date(Date.now() - 60_000).toISOString()}),
    {
      mode: 0o600,
    },
  )
}

/** `count` VMs up with a TTL that ran out, their uids. */
async function expiredVms(ctx: Context, count: number): Promise<string[]> {
  const up = await upNoBoot(ctx, '--count', String(count), '--ttl', '1h')
  expect(up.code, up.stdout + up.stderr).toBe(0)
  const uids = parseJson(up).data.vms.map((vm: {uid: string}) => vm.uid) as string[]
  for (const uid of uids) expireTtl(ctx, uid)
  return uids
}

const resultsOf = (result: CliResult) => parseJson(result).data.results as {uid: string; action: string; billing: boolean | null}[]

/** A VM that ran and was deleted by another directory: its `error` tombstone is listed, and no note of it is here. */
function deletedElsewhere(ctx: Context) {
  const gone = ctx.sim.addWorkload({deployedAt: Date.now() - 60_000, name: 'tcli-default-gone', status: 'running'})
  ctx.sim.deleteExternally(gone.uid)
  return gone
}

/** The dstack fleet of the configured fleet (default). */
const DSTACK_FLEET = 'targon-default'

/**
 * Runs `body` with a dstack double and the settings that name it (the simulated VMs share 127.0.0.1: each gets its
 * own name by the host pattern), and stops the double afterwards.
 */
async function withDstack(body: (dstack: DstackSimulator, env: () => Record<string, string>) => Promise<CliResult>): Promise<CliResult> {
  const dstack = await startDstack()
  const env = () => ({
    TARGON_DSTACK_HOST_PATTERN: '{uid}.{ip}.sslip.io',
    TARGON_DSTACK_PROJECT: 'main',
    TARGON_DSTACK_TOKEN: DSTACK_TOKEN,
    TARGON_DSTACK_URL: dstack.url,
  })
  try {
    return await body(dstack, env)
  } finally {
    await dstack.stop()
  }
}

/** The name dstack reaches a simulated VM by, under withDstack's pattern. */
const dstackHostOf = (uid: string) => `${uid.toLowerCase()}.127.0.0.1.sslip.io`

/** The exit code of a run ended by a signal it handles: 128 and the signal's number. */
const SIGNAL_EXIT = {SIGHUP: 129, SIGINT: 130, SIGTERM: 143} as const

/**
 * `up` (`args`: UP or NO_BOOT) sent `signal` once `when` holds (and `delayMs` more): it ends INTERRUPTED with the
 * signal's exit code, run without and with a config.json.
 */
/**
 * The interrupted deploy is held by the server until the clean-up's DELETE was refused (the workload still
 * registered), and only then takes effect: the clean-up must watch it land, not leave it as a registered leftover.
 */
function deployLandsAfterCleanup(ctx: Context): void {
  const refused = waitFor(() => ctx.sim.requests('DELETE', /\/workloads\//).some((request) => request.status === 500), 60_000)
  ctx.sim.inject({holdUntil: refused.then(() => sleep(300)), method: 'POST', path: '/deploy'})
}

function upInterrupted({
  args,
  delayMs,
  name,
  signal = 'SIGINT',
  when,
  ...fault
}: Pick<Scenario, 'name' | 'setup' | 'sim' | 'vm'> & {
  args: string[]
  delayMs?: number
  signal?: keyof typeof SIGNAL_EXIT
  when: (ctx: Context) => boolean
}): Scenario {
  return {
    code: 'INTERRUPTED',
    exit: SIGNAL_EXIT[signal],
    interrupts: true,
    name,
    run: (ctx) => ctx.targon(args, {onSpawn: signalWhen(() => when(ctx), signal, delayMs)}),
    ...fault,
  }
}

export const scenarios: Scenario[] = [
  // ---- API ----
  {
    code: 'AUTH',
    exit: 3,
    name: 'API: 401 on create',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/workloads$/, status: 401}),
  },
  {
    code: 'AUTH',
    exit: 3,
    name: 'API: 403 on the org',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({path: '/ssh-keys', status: 403}),
  },
  {
    code: 'INSUFFICIENT_CREDITS',
    exit: 10,
    name: 'API: deploy refused for credits (402) on every offer',
    run: (ctx) => ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']),
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: '/deploy', status: 402}),
  },
  {
    code: 'NO_CAPACITY',
    exit: 10,
    name: 'API: deploy refused for capacity (503 WORKLOAD_VM_NO_CAPACITY) on every offer',
    run: (ctx) => ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']),
    setup: (ctx) => ctx.sim.inject({...NO_CAPACITY_503, method: 'POST', path: '/deploy'}),
  },
  {
    code: 'NO_CAPACITY',
    exit: 10,
    name: 'API: create refused for capacity (503) on every offer: nothing is created, never taken for a lost answer',
    async run(ctx) {
      const up = await ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap'])
      // One create per offer under the cap, none repeated, and no listing to reconcile a lost answer.
      expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(2)
      expect(ctx.sim.requests('GET', /\/workloads$/).filter((request) => request.query.name)).toEqual([])
      expect(ctx.sim.workloads.size).toBe(0)
      return up
    },
    setup: (ctx) => ctx.sim.inject({...NO_CAPACITY_503, method: 'POST', path: /\/workloads$/}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: deploy answered 503 TEMPORARY twice is sent again to the same workload and succeeds',
    run: deploysAnswered(503, 503, 200),
    sim: {temporaryDeploys: 2},
  },
  {
    code: null,
    exit: 0,
    name: 'API: deploy answered 409 (a state conflict, not capacity): the state is read and the deploy sent again',
    run: deploysAnswered(409, 200),
    setup: (ctx) =>
      ctx.sim.inject({
        body: JSON.stringify({error: 'not deployable now', reason: 'WORKLOAD_VM_INVALID_STATE'}),
        method: 'POST',
        path: '/deploy',
        status: 409,
        times: 1,
      }),
  },
  {
    code: 'QUOTA_EXCEEDED',
    exit: 13,
    name: 'API: a 429 quota (WORKLOAD_VM_SESSION_LIMIT) on create is final: exit 13, no retry, no other offer',
    async run(ctx) {
      const up = await ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap'])
      expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(1)
      return up
    },
    sim: {workloadLimit: 0},
  },
  {
    code: 'QUOTA_EXCEEDED',
    exit: 13,
    name: 'API: a quota met by one VM of --count 3 ends the run: nothing more is created, the VM made is rolled back, exit 13',
    async run(ctx) {
      const up = await upNoBoot(ctx, '--count', '3')
      // One create per VM at most (the first VMs' creates go out together), and no other offer is tried.
      const creates = ctx.sim.requests('POST', /\/workloads$/)
      expect(creates.length).toBeLessThanOrEqual(3)
      expect(creates.filter((request) => request.status === 429).length).toBeGreaterThan(0)
      expect(ctx.sim.workloads.size).toBe(1)
      return up
    },
    sim: {workloadLimit: 1},
  },
  {
    code: null,
    exit: 0,
    name: 'API: a quota met by --count 3 --min 1: the VM made is kept, the others fail QUOTA_EXCEEDED',
    async run(ctx) {
      const up = await upNoBoot(ctx, '--count', '3', '--min', '1')
      const failed = parseJson(up).data.failed.map((failure: {error: {code: string}}) => failure.error.code)
      expect(failed).toEqual(['QUOTA_EXCEEDED', 'QUOTA_EXCEEDED'])
      return up
    },
    sim: {workloadLimit: 1},
  },
  {
    code: null,
    exit: 0,
    name: 'API: deploy 500 (still registered) is sent again to the same workload and succeeds',
    run: deploysAnswered(500, 200),
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: '/deploy', status: 500, times: 1}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: an org-scoped service token that /orgs shows in no org rents with an explicit org',
    run: (ctx) => ctx.targon(NO_BOOT, {env: {TARGON_API_KEY: 'tgn_sim_service_key', TARGON_ORG: 'acme'}}),
  },
  {
    code: 'PRICE_CAP_EXCEEDED',
    exit: 9,
    name: 'API: a workload billing 9.98 USD/h reports frozen_cost_per_hour 0.01: the cap refuses it, and it is deleted',
    run: (ctx) => upNoBoot(ctx),
    sim: {frozenCostPerHour: 0.01, priceDrift: 8.29},
  },
  {
    code: null,
    exit: 0,
    name: 'API: key registration answered 502 before it took effect: the keys are listed again and the key sent again',
    async run(ctx) {
      const up = await upNoBoot(ctx)
      expect(ctx.sim.requests('POST', /\/ssh-keys$/).map((request) => request.status)).toEqual([502, 201])
      expect(ctx.sim.sshKeys.size).toBe(1)
      return up
    },
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/ssh-keys$/, status: 502, times: 1}),
  },
  {
    code: null,
    exit: 0,
    process: true,
    name: "API: two guard install --team at once while the guard key's registration answers 502 before it took effect: one guard key",
    async run(ctx) {
      writeConfigFile(ctx.configDir, {'api-key': DEFAULT_TOKEN, 'api-url': ctx.sim.url})
      const crontab = fakeCrontab()
      const install = () => ctx.targon(['guard', 'install', '--team', '--cron', '--json'], {env: {PATH: crontab.path}})
      const both = await Promise.all([install(), install()])
      for (const each of both) expect(each.code, each.stdout + each.stderr).toBe(0)
      const guardKeys = [...ctx.sim.sshKeys.values()].filter((key) => key.name.startsWith('targon-guard-'))
      expect(guardKeys).toHaveLength(1)
      expect(both.map((each) => parseJson(each).data.guard_key.uid)).toEqual([guardKeys[0]?.uid, guardKeys[0]?.uid])
      expect(ctx.sim.requests('POST', /\/ssh-keys$/).map((request) => request.status)).toEqual([502, 201])
      return both[0]
    },
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/ssh-keys$/, status: 502, times: 1}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: key registration answered 503 after it took effect: found by its blob, never registered twice',
    async run(ctx) {
      const up = await upNoBoot(ctx)
      expect(ctx.sim.requests('POST', /\/ssh-keys$/)).toHaveLength(1)
      expect(ctx.sim.sshKeys.size).toBe(1)
      return up
    },
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/ssh-keys$/, statusAfterCommit: 503, times: 1}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: create committed but its answer lost',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({dropAfterCommit: true, method: 'POST', path: /\/workloads$/, times: 1}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: create answered by an HTML 502 page from a proxy (sent again after reconciling)',
    // The listing is watched for the reconcile window before the create is sent again: 2 s here, not 30.
    run: (ctx) => ctx.targon(NO_BOOT, {env: {TARGON_RECONCILE_WINDOW: '2'}}),
    setup: (ctx) =>
      ctx.sim.inject({
        body: '<html><h1>502 Bad Gateway</h1></html>',
        contentType: 'text/html',
        method: 'POST',
        path: /\/workloads$/,
        status: 502,
        times: 1,
      }),
  },
  {
    code: null,
    exit: 0,
    name: 'API: create reset before it took effect three times in a row: reconciled and sent again each time, one workload',
    async run(ctx) {
      const up = await ctx.targon(NO_BOOT, {env: {TARGON_RECONCILE_WINDOW: '1'}})
      expect(ctx.sim.requests('POST', /\/workloads$/).map((request) => request.status)).toEqual([-1, -1, -1, 201])
      expect(ctx.sim.workloads.size).toBe(1)
      return up
    },
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/workloads$/, reset: true, times: 3}),
  },
  {
    code: 'NETWORK_ERROR',
    exit: 5,
    name: 'API: create reset before it took effect on every send: given up after four sends, nothing created',
    async run(ctx) {
      const up = await ctx.targon(NO_BOOT, {env: {TARGON_RECONCILE_WINDOW: '1'}})
      expect(ctx.sim.requests('POST', /\/workloads$/)).toHaveLength(4)
      expect(ctx.sim.workloads.size).toBe(0)
      return up
    },
    setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/workloads$/, reset: true}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: a 5xx burst while polling the state',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({method: 'GET', path: '/state', status: 503, times: 3}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: a 429 storm with Retry-After while polling the state',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({method: 'GET', path: '/state', retryAfter: '1', status: 429, times: 3}),
  },
  {code: 'API_ERROR', exit: 5, name: 'API: the state turns to error', run: (ctx) => upNoBoot(ctx), sim: {provisioning: 'error'}},
  {
    code: 'TIMEOUT',
    exit: 6,
    name: 'API: stuck in provisioning until the timeout',
    run: (ctx) => upNoBoot(ctx, '--timeout', '3s'),
    sim: {provisioning: 'stuck'},
  },
  {
    code: 'API_ERROR',
    exit: 5,
    process: true,
    name: 'API: the workload deleted externally while waiting',
    run: (ctx) =>
      ctx.targon(NO_BOOT, {
        onSpawn: () =>
          void waitFor(() => ctx.sim.live().some((w) => w.status === 'provisioning')).then(() =>
            ctx.sim.live().forEach((w) => ctx.sim.deleteExternally(w.uid)),
          ),
      }),
    sim: {provisioning: 'stuck'},
  },
  {
    code: 'PRICE_CAP_EXCEEDED',
    exit: 9,
    name: 'API: the price changed between listing and create',
    run: (ctx) => upNoBoot(ctx),
    sim: {priceDrift: 0.2},
  },
  {
    code: null,
    exit: 0,
    name: 'API: delete answers 500 although the workload is deleted',
    run: async (ctx) => {
      expect((await upNoBoot(ctx)).code).toBe(0)
      ctx.sim.inject({method: 'DELETE', path: '/workloads/', statusAfterCommit: 500})
      return ctx.targon(['down', '--all', '--json'])
    },
  },
  {
    code: null,
    exit: 0,
    name: 'API: delete answers 404 (already gone)',
    run: async (ctx) => {
      const uid = parseJson(await upNoBoot(ctx)).data.vms[0].uid as string
      ctx.sim.deleteExternally(uid)
      return ctx.targon(['down', uid, '--json'])
    },
    sim: {afterDelete: 'deleted'},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a VM of this machine deleted elsewhere shows an error tombstone: down counts it gone, not billing by assumption',
    run: async (ctx) => {
      const uid = await oneVm(ctx)
      ctx.sim.deleteExternally(uid)
      // down's first listing shows the `deleted` record; its final one, held back, the `error` tombstone it bounced to.
      ctx.sim.inject({delayMs: 1, method: 'GET', path: /\/workloads$/, times: 1})
      ctx.sim.inject({delayMs: 1500, method: 'GET', path: /\/workloads$/, times: 1})
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'already-gone', billing: false, uid}])
      return down
    },
    sim: {tombstoneBounceMs: 700},
  },
  {
    code: 'BAD_RESPONSE',
    exit: 5,
    name: 'API: a malformed JSON body',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({body: '{"items": [{"slug": "ac', path: '/tha/v3/orgs', status: 200}),
  },
  {
    code: null,
    exit: 0,
    name: 'API: the VM is renamed after create to an ssh_config injection: shown by its uid, and down --all deletes it by uid',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.renameHostile(uid, 'evil *\n  ProxyCommand touch /tmp/targon-pwned')
      const status = parseJson(await ctx.targon(['status', '--json']))
      expect(status.data.vms).toMatchObject([{name: null, uid}])
      expect(status.warnings.join('\n')).toContain(`${uid} has a name that breaks Targon's naming rule`)
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', name: null, uid}])
      return down
    },
  },

  // ---- SSH ----
  {
    code: 'SSH_FAILED',
    exit: 7,
    name: 'SSH: sshd never comes up',
    // The last SSH attempt comes just before the run's deadline: SSH_FAILED, not a time-out.
    run: (ctx) => ctx.targon([...UP, '--timeout', '8s']),
    vm: {sshdDelaySeconds: 999},
  },
  {code: 'SSH_FAILED', exit: 7, name: 'SSH: the key is rejected', vm: {rejectKey: true}},
  {
    code: 'HOST_KEY_MISMATCH',
    exit: 7,
    name: 'SSH: the host key changed (the adopted VM is deleted with --on-failure delete)',
    vms: true,
    run: async (ctx) => {
      const first = parseJson(await ctx.targon([...UP, '--name', 'pinned']))
      await ctx.farm.vm(first.data.vms[0].uid).rotateHostKey()
      return ctx.targon([...UP, '--name', 'pinned', '--on-failure', 'delete'])
    },
  },
  {
    code: null,
    exit: 0,
    name: 'SSH: the connection drops during the bootstrap; the VM is kept and a re-run completes it',
    run: async (ctx) => {
      const dropped = await ctx.targon([...UP, '--name', 'resume', '--on-failure', 'keep'], {
        onSpawn: () =>
          void waitFor(() => vmCalls(ctx).length > 0).then(() => [...ctx.farm.vms.values()].forEach((vm) => vm.dropConnections())),
      })
      expect(dropped.code).toBe(7)
      expect(ctx.sim.live()).toHaveLength(1)
      const resumed = await ctx.targon([...UP, '--name', 'resume'])
      expect(parseJson(resumed).data.vms[0].dstack.healthy).toBe(true)
      return resumed
    },
    vm: {dpkgLockSeconds: 3},
  },
  {code: 'BOOTSTRAP_FAILED', exit: 8, name: 'SSH: an install step fails', vm: {failPackage: 'docker-ce'}},
  {
    code: null,
    exit: 0,
    name: "dstack: a repeat up --name during a running dstack task on a host dstack took over leaves the task, its container and dstack's shim untouched",
    vms: true,
    run: async (ctx) => {
      const first = await ctx.targon([...UP, '--name', 'dstack-host'])
      expect(first.code, first.stdout + first.stderr).toBe(0)
      const uid = parseJson(first).data.vms[0].uid as string
      const vm = ctx.farm.vm(uid)
      // dstack 0.21.2's deploy of a fleet with env:, from a server of another version; then a run lands on the host.
      const deploy = dstackDeployScript({env: {HF_HOME: '/data/hf'}, keys: [PROJECT_KEY], version: '0.21.3'})
      const deployed = await ctx.targon(['exec', '--vms', uid, '--', deploy])
      expect(deployed.code, deployed.stderr).toBe(0)
      vm.setTasks([{id: 'a1b2c3d4-train-0', status: 'running'}])
      vm.setContainers(['a1b2c3d4-train-0'])
      const files = () =>
        [
          '/usr/local/bin/dstack-shim',
          '/root/.dstack/shim.env',
          '/etc/systemd/system/dstack-shim.service',
          '/var/lib/sim-doubles/units/dstack-shim.pid',
        ].map((path) => vm.readFile(path))
      const before = {calls: vm.calls().length, files: files()}
      const again = await ctx.targon([...UP, '--name', 'dstack-host'])
      expect(again.code, again.stdout + again.stderr).toBe(0)
      expect(files()).toEqual(before.files)
      const touched = vm
        .calls()
        .slice(before.calls)
        .filter((call) =>
          /^(systemctl (restart|stop|start) (dstack-shim|docker)|docker (stop|rm|kill|restart)|curl .*dstack-shim)/.test(call),
        )
      expect(touched).toEqual([])
      // The task still runs on the same shim process, and its container is still there.
      const seen = await ctx.targon([
        'exec',
        '--vms',
        uid,
        '--json',
        '--',
        'sudo /usr/local/lib/targon-fleet/shim-get /api/tasks | tail -n1; sudo docker ps --format {{.Names}}',
      ])
      expect(parseJson(seen).data.results[0].tail).toEqual(['{"tasks":[{"id":"a1b2c3d4-train-0","status":"running"}]}', 'a1b2c3d4-train-0'])
      expect(parseJson(again).data.vms[0].dstack).toMatchObject({managed_by: 'dstack-managed', shim_version: '0.21.3'})
      return again
    },
  },
  {
    code: null,
    exit: 0,
    name: 'SSH: the connection drops half way through fetching a --out tree for down --jobs-done; the VM is kept, nothing is stored as fetched, and a re-run completes it',
    async run(ctx) {
      const uid = await oneVm(ctx, '--ttl', '2h')
      const files = 400
      const started = await ctx.targon([
        'run',
        uid,
        '--detach',
        '--down',
        '--no-sync',
        '--out',
        'out',
        '--json',
        '--',
        `mkdir -p out; for i in $(seq 1 ${files}); do head -c 262144 /dev/zero >out/f$i; done`,
      ])
      expect(started.code, started.stdout + started.stderr).toBe(0)
      const id: string = parseJson(started).data.job.id
      await waitFor(() => ctx.farm.vm(uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 60_000)
      const out = join(ctx.configDir, 'jobs', id, 'out', 'out')
      const whole = () => (existsSync(out) ? readdirSync(out).filter((name) => !name.startsWith('.')) : [])
      const dropped = await ctx.targon(['down', '--jobs-done', '--all', '--json'], {
        onSpawn: () => void waitFor(() => whole().length >= 20).then(() => ctx.farm.vm(uid).dropConnections()),
      })
      expect(dropped.code, dropped.stdout + dropped.stderr).toBe(0)
      const doc = parseJson(dropped)
      expect(doc.data.results).toEqual([])
      expect(doc.data.kept).toEqual([expect.objectContaining({state: 'unreadable', uid})])
      expect(doc.data.kept[0].reason).toContain('was not fetched (the SSH connection to the VM was lost)')
      expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([uid])
      // What came is whole under its final name; the job is not in the store as fetched.
      expect(whole().length).toBeLessThan(files)
      for (const name of whole()) expect(statSync(join(out, name)).size).toBe(262144)
      expect(existsSync(join(ctx.configDir, 'jobs', id, 'job.json'))).toBe(false)

      const resumed = await ctx.targon(['down', '--jobs-done', '--all', '--json'])
      expect(resultsOf(resumed)).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid})])
      expect(whole()).toHaveLength(files)
      expect(existsSync(join(ctx.configDir, 'jobs', id, 'job.json'))).toBe(true)
      return resumed
    },
    vms: true,
  },

  {
    code: 'COPY_FAILED',
    exit: 12,
    name: 'fetch: run --down whose --out fetch stops at its bound (a sparse 2 GiB file over job-store-limit 1M): what came is kept, and the VM is deleted, as after any fetch of an attached run --down',
    async run(ctx) {
      const uid = await oneVm(ctx, '--ttl', '2h')
      expect((await ctx.targon(['config', 'set', 'job-store-limit', '1M'])).code).toBe(0)
      const cwd = tempDir('targon-bound-')
      const command = 'mkdir -p out; echo small >out/a.txt; truncate -s 2G out/big'
      const run = await ctx.targon(['run', uid, '--down', '--no-sync', '--out', 'out', '--json', '--', command], {cwd})
      const doc = parseJson(run)
      const id: string = doc.data.job.id
      expect(doc.error.message).toContain(`job ${id} succeeded, but --out out was not fetched: the fetch stopped at its bound of 1M`)
      expect(doc.error.hint).toContain('was deleted, as targon run --down asked')
      expect(doc.data.fetch.copied).toEqual(['out/a.txt'])
      expect(doc.data.deleted).toEqual([expect.objectContaining({action: 'deleted', billing: false, uid})])
      // Only what came, whole: nothing of the sparse file, not even a temporary one.
      expect(readdirSync(join(cwd, 'targon-out', id, 'out'))).toEqual(['a.txt'])
      return run
    },
    vms: true,
  },
  {
    code: 'COPY_FAILED',
    exit: 12,
    kept: 1,
    name: 'fetch: jobs wait on a detached run --down job whose fetch stops at its bound: the VM is kept under its TTL, as a failed fetch into the job store keeps it',
    async run(ctx) {
      const uid = await oneVm(ctx, '--ttl', '2h')
      expect((await ctx.targon(['config', 'set', 'job-store-limit', '1M'])).code).toBe(0)
      const command = 'mkdir -p out; echo small >out/a.txt; truncate -s 2G out/big'
      const started = await ctx.targon(['run', uid, '--detach', '--down', '--no-sync', '--out', 'out', '--json', '--', command])
      expect(started.code, started.stdout + started.stderr).toBe(0)
      const id: string = parseJson(started).data.job.id
      await waitFor(() => ctx.farm.vm(uid).hasFile(`/home/ubuntu/.targon/jobs/${id}/exit_code`), 30_000)
      const cwd = tempDir('targon-bound-')
      const waited = await ctx.targon(['jobs', 'wait', id, '--json'], {cwd})
      const doc = parseJson(waited)
      expect(doc.error.message).toContain('the fetch stopped at its bound of 1M')
      expect(doc.data.deleted).toBeNull()
      expect(doc.warnings.join('\n')).toContain('is kept and bills')
      expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([uid])
      // What came is in the job store, not yet in ./targon-out (only a whole fetch goes there).
      expect(readdirSync(join(ctx.configDir, 'jobs', id, 'out', 'out'))).toEqual(['a.txt'])
      expect(existsSync(join(cwd, 'targon-out'))).toBe(false)
      return waited
    },
    vms: true,
  },

  // ---- early SSH: the deploy timing of the latency model, scaled by 0.05 (the address after 20 s is 1 s here) ----
  {
    code: null,
    exit: 0,
    name: 'early SSH: sshd answers while the state still says provisioning; the bootstrap starts then',
    async run(ctx) {
      const up = await ctx.targon(UP)
      const vm = parseJson(up).data.vms[0]
      const runningAt = ctx.sim.workloads.get(vm.uid)?.runningAt ?? 0
      const simVm = ctx.farm.vm(vm.uid)
      expect(runningAt).toBeGreaterThan(0)
      expect(simVm.sshAnswers[0]).toBeLessThan(runningAt)
      // The first command of the bootstrap (the detached install's systemd-run) ran before the state said running.
      expect(simVm.timedCalls()[0]?.at).toBeLessThan(runningAt)
      return up
    },
    vm: {latency: {addressSeconds: 10, runningSeconds: 120, sshAnswersSeconds: 20}, latencyScale: 0.05},
  },
  {
    code: null,
    exit: 0,
    name: 'early SSH: the bootstrap ends before the state says running; up waits for running, then succeeds',
    async run(ctx) {
      const up = await ctx.targon(UP)
      const ended = Date.now()
      const vm = parseJson(up).data.vms[0]
      const runningAt = ctx.sim.workloads.get(vm.uid)?.runningAt ?? 0
      expect(vm.status).toBe('running')
      expect(ended).toBeGreaterThan(runningAt)
      const end = (name: string) => {
        const phase = vm.phases.find((each: {name: string}) => each.name === name)
        return phase.started_ms + phase.duration_ms
      }
      // wait-running overlaps the bootstrap and ends last, when the state says running.
      expect(end('shim-start')).toBeLessThan(end('wait-running'))
      expect(vm.phases.find((phase: {name: string}) => phase.name === 'install').started_ms).toBeLessThan(end('wait-running'))
      return up
    },
    vm: {latency: {addressSeconds: 10, runningSeconds: 240, sshAnswersSeconds: 20}, latencyScale: 0.05},
  },
  {
    code: null,
    exit: 0,
    name: 'early SSH: an address in the state but SSH refusing for a while backs off and does not fail',
    async run(ctx) {
      const up = await ctx.targon(UP)
      const simVm = ctx.farm.vm(parseJson(up).data.vms[0].uid)
      expect(simVm.connections).toBeGreaterThan(2)
      expect(parseJson(up).warnings.filter((warning: string) => warning.startsWith('waiting for SSH'))).toHaveLength(1)
      return up
    },
    vm: {latency: {addressSeconds: 0, runningSeconds: 20, sshAnswersSeconds: 80}, latencyScale: 0.05},
  },
  {
    code: 'API_ERROR',
    exit: 5,
    name: 'early SSH: the VM turns to error while bootstrapping (still provisioning): exit 5, deleted',
    run: (ctx) =>
      ctx.targon(UP, {
        onSpawn: () =>
          void waitFor(() => vmCalls(ctx).some((call) => call.startsWith('apt-get install'))).then(() => {
            for (const workload of ctx.sim.live()) ctx.sim.crash(workload.uid)
          }),
      }),
    vm: {latency: {runningSeconds: 600}, latencyScale: 0.05},
  },
  {code: 'BOOTSTRAP_FAILED', exit: 8, name: 'SSH: the shim is unhealthy', vm: {shimUnhealthy: true}},
  {
    code: null,
    exit: 0,
    name: 'SSH: the idle probe prints without end: cut off at 64 KiB, the VM is unreadable and kept by down --idle',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
      const place = `sudo mkdir -p /usr/local/lib/targon-fleet && echo ${Buffer.from(flood).toString('base64')} | base64 -d | sudo tee /usr/local/lib/targon-fleet/idle-sampler.py >/dev/null`
      expect((await ctx.targon(['exec', '--vms', uid, '--', place])).code).toBe(0)
      const idle = await ctx.targon(['down', '--idle', '--idle-limit', '1s', '--json'])
      expect(parseJson(idle).data.kept).toMatchObject([{reason: expect.stringContaining('more than 64 KiB'), uid}])
      expect(ctx.sim.billing()).toHaveLength(1)
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      return idle
    },
    vms: true,
  },

  {
    code: null,
    exit: 0,
    name: 'dstack: a guard sweep while a dstack task pulls its image at 0 % GPU keeps that VM and deletes only the idle one',
    async run(ctx) {
      const env = {TARGON_IDLE_SAMPLE_INTERVAL: '1'}
      // Idle limits are at least three sample intervals (3 s here); the sweep must see the idle VM past that.
      const up = await ctx.targon([...UP, '--count', '2', '--idle', '3s'], {env})
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const [idle, pulling] = parseJson(up).data.vms.map((vm: {uid: string}) => vm.uid) as [string, string]
      ctx.farm.vm(pulling).setTasks([{id: 'run-7f3a-0', status: 'pulling'}])
      for (const deadline = Date.now() + 30_000; ; await sleep(1000)) {
        const usage = parseJson(await ctx.targon(['status', '--usage', '--json'], {env})).data.vms.find(
          (vm: {uid: string}) => vm.uid === idle,
        )?.usage
        if ((usage?.idle_seconds ?? 0) > 3) break
        if (Date.now() > deadline) throw new Error(`${idle} not idle past 3 s in 30 s: ${JSON.stringify(usage)}`)
      }
      const sweep = await ctx.targon(['sweep', '--json'], {env})
      expect(resultsOf(sweep), sweep.stdout + sweep.stderr).toMatchObject([{action: 'deleted', billing: false, uid: idle}])
      expect(parseJson(sweep).data.kept).toMatchObject([{reason: expect.stringContaining('dstack task run-7f3a-0 pulling'), uid: pulling}])
      expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([pulling])
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      return sweep
    },
    vms: true,
  },
  {
    code: null,
    exit: 0,
    name: 'dstack: unreachable during down of a VM in its fleet: deleted all the same with a warning; the next sync drops it',
    run: (ctx) =>
      withDstack(async (dstack, env) => {
        const up = await ctx.targon([...UP, '--dstack'], {env: env()})
        expect(up.code, up.stdout + up.stderr).toBe(0)
        const {name, uid} = parseJson(up).data.vms[0]
        expect(dstack.hosts(DSTACK_FLEET).map((host) => host.hostname)).toEqual([dstackHostOf(uid)])
        // dstack goes away: nothing answers on its port.
        const port = Number(new URL(dstack.url).port)
        await dstack.stop()
        // A person hears of it: one notification says dstack was not told.
        const heard: {targon: {event: string; vms: {uid: string}[]}; text: string}[] = []
        const receiver = createServer((request, response) => {
          let body = ''
          request.on('data', (chunk: Buffer) => (body += chunk.toString()))
          request.on('end', () => {
            heard.push(JSON.parse(body))
            response.writeHead(200).end()
          })
        })
        await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
        const notifyUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
        const down = await ctx
          .targon(['down', name, '--json'], {env: {...env(), TARGON_NOTIFY_URL: notifyUrl}})
          .finally(() => receiver.close())
        expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, dstack: 'unreachable', uid}])
        expect(parseJson(down).warnings.join('\n')).toContain('dstack could not take')
        expect(heard).toMatchObject([
          {targon: {event: 'dstack-out-of-sync', vms: [{uid}]}, text: expect.stringContaining('next targon dstack sync')},
        ])
        expect(ctx.sim.billing()).toEqual([])
        // dstack is back: the next sync takes the deleted VM out of its fleet.
        await dstack.start(port)
        const sync = await ctx.targon(['dstack', 'sync', '--fleet', 'default', '--json'], {env: env()})
        expect(sync.code, sync.stdout + sync.stderr).toBe(0)
        expect(parseJson(sync).data.removed).toMatchObject([{hostname: dstackHostOf(uid)}])
        expect(dstack.hosts(DSTACK_FLEET)).toEqual([])
        return down
      }),
    vms: true,
  },
  {
    code: null,
    exit: 0,
    name: 'dstack: hangs during down of a VM in its fleet: the deletion waits TARGON_DSTACK_LEAVE_TIMEOUT for it, no longer, and goes ahead; a bad value of it is a warning, and 15 s holds',
    run: (ctx) =>
      withDstack(async (dstack, env) => {
        const up = await ctx.targon([...UP, '--count', '2', '--dstack'], {env: env()})
        expect(up.code, up.stdout + up.stderr).toBe(0)
        const [vm, other] = parseJson(up).data.vms as {name: string; uid: string}[]
        if (!vm || !other) throw new Error('two VMs expected')
        const {name, uid} = vm
        // A budget out of range is a warning, and its default holds: the VM still leaves dstack's fleet, then goes.
        const unbounded = await ctx.targon(['down', other.name, '--json'], {env: {...env(), TARGON_DSTACK_LEAVE_TIMEOUT: '0'}})
        expect(unbounded.code, unbounded.stdout + unbounded.stderr).toBe(0)
        expect(resultsOf(unbounded)).toMatchObject([{action: 'deleted', billing: false, dstack: 'removed', uid: other.uid}])
        expect(parseJson(unbounded).warnings.join('\n')).toContain(
          'TARGON_DSTACK_LEAVE_TIMEOUT "0" is not a number of seconds from 1 to 3600: dstack may hold this deletion up for 15 s per request instead',
        )
        expect(dstack.hosts(DSTACK_FLEET).map((host) => host.hostname)).toEqual([dstackHostOf(uid)])
        // dstack takes the connection and never answers (the API's own http-timeout is a minute).
        dstack.inject({holdUntil: new Promise(() => {}), path: '/fleets/'})
        // 15 s by default (test/unit/settings-budgets.test.ts); 2 s here.
        const started = Date.now()
        const down = await ctx.targon(['down', name, '--json'], {env: {...env(), TARGON_DSTACK_LEAVE_TIMEOUT: '2'}})
        expect(Date.now() - started).toBeLessThan(15_000)
        expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, dstack: 'unreachable', uid}])
        expect(parseJson(down).warnings.join('\n')).toContain('within 2 s')
        expect(ctx.sim.billing()).toEqual([])
        dstack.clearFaults()
        return down
      }),
    vms: true,
  },
  {
    code: null,
    exit: 0,
    name: 'dstack: the fleet is being processed for three requests of a sync: it is sent again until it goes through',
    run: (ctx) =>
      withDstack(async (dstack, env) => {
        const up = await ctx.targon([...UP, '--count', '2', '--dstack'], {env: env()})
        expect(up.code, up.stdout + up.stderr).toBe(0)
        const [kept, gone] = parseJson(up).data.vms as {uid: string; name: string}[]
        if (!kept || !gone) throw new Error('two VMs expected')
        const down = await ctx.targon(['down', gone.name, '--json'], {env: env()})
        expect(resultsOf(down)).toMatchObject([{dstack: 'removed', uid: gone.uid}])
        // down's delete_instances leaves the host in the fleet's spec: the sync's apply takes it out, while dstack's
        // own processing holds the fleet for three requests.
        dstack.processFleet(DSTACK_FLEET, {requests: 3})
        const applies = dstack.requests('/fleets/apply').length
        const sync = await ctx.targon(['dstack', 'sync', '--fleet', 'default', '--json'], {env: env()})
        expect(sync.code, sync.stdout + sync.stderr).toBe(0)
        expect(parseJson(sync).data).toMatchObject({action: 'updated', removed: [{uid: null}], requests: 5, retries: 3})
        expect(
          dstack
            .requests('/fleets/apply')
            .slice(applies)
            .map((request) => request.status),
        ).toEqual([400, 400, 400, 200])
        expect(dstack.hosts(DSTACK_FLEET).map((host) => host.hostname)).toEqual([dstackHostOf(kept.uid)])
        expect((await ctx.targon(['down', kept.name, '--json'], {env: env()})).code).toBe(0)
        return sync
      }),
    vms: true,
  },
  {
    code: 'BOOTSTRAP_FAILED',
    exit: 8,
    name: 'SSH: the hostname does not resolve and /etc/hosts cannot be written: sudo would speak to dstack, exit 8, deleted',
    run: async (ctx) => {
      const up = await ctx.targon(UP)
      expect(parseJson(up).error.message).toContain('/etc/hosts cannot be written')
      return up
    },
    vm: {hostnameUnresolved: 'hosts-read-only'},
  },

  // ---- process ----
  upInterrupted({
    args: NO_BOOT,
    delayMs: 200,
    name: 'process: SIGINT in register (create in flight)',
    setup: (ctx) => ctx.sim.inject({delayMs: 1500, method: 'POST', path: /\/workloads$/}),
    when: (ctx) => ctx.sim.requests('POST', /\/workloads$/).length > 0,
  }),
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'process: SIGINT while a fleet has 8 creates in flight and one waiting for a slot',
    interrupts: true,
    async run(ctx) {
      const result = await ctx.targon([...NO_BOOT, '--count', '9'], {
        // Longer than a create takes to commit (1.5 s): the creates in flight are looked for within it.
        env: {TARGON_RECONCILE_WINDOW: '4'},
        onSpawn: signalWhen(() => ctx.sim.requests('POST', /\/workloads$/).length >= 8, 'SIGINT', 200),
      })
      expect(ctx.sim.maxInFlight.POST).toBe(8)
      // The creates the server committed after the interrupt were found, named, and tried: none forgotten.
      const results = parseJson(result).data.cleanup.results
      expect(results.filter((each: {action: string}) => each.action === 'left-registered')).toHaveLength(8)
      return result
    },
    setup: (ctx) => ctx.sim.inject({delayMs: 1500, method: 'POST', path: /\/workloads$/}),
  },
  upInterrupted({
    args: NO_BOOT,
    delayMs: 200,
    name: 'process: SIGINT in deploy: the deploy lands after the clean-up found it registered, and is deleted',
    setup: deployLandsAfterCleanup,
    when: (ctx) => ctx.sim.requests('POST', '/deploy').length > 0,
  }),
  upInterrupted({
    args: NO_BOOT,
    delayMs: 200,
    name: 'process: SIGHUP (a closed terminal) in deploy: the deploy lands after the clean-up found it registered, and is deleted',
    setup: deployLandsAfterCleanup,
    signal: 'SIGHUP',
    when: (ctx) => ctx.sim.requests('POST', '/deploy').length > 0,
  }),
  upInterrupted({
    args: NO_BOOT,
    name: 'process: SIGINT in wait-running',
    sim: {provisioning: 'stuck'},
    when: (ctx) => ctx.sim.live().some((w) => w.status === 'provisioning'),
  }),
  upInterrupted({
    args: UP,
    name: 'process: SIGINT in install',
    vm: {dpkgLockSeconds: 30},
    when: (ctx) => vmCalls(ctx).length > 0,
  }),
  upInterrupted({
    args: UP,
    name: 'process: SIGINT in shim-start',
    vm: {shimUnhealthy: true},
    when: (ctx) => vmCalls(ctx).some((call) => call.includes('restart dstack-shim')),
  }),
  {
    code: 'INTERRUPTED',
    exit: 143,
    name: 'process: SIGTERM in install is the VM interrupted, never a failed step, in JSON, events and display',
    run: async (ctx) => {
      const signalled = () => ({onSpawn: signalWhen(() => [...ctx.farm.vms.values()].some((vm) => vm.sshSessions() > 0), 'SIGTERM')})
      // The display first (plain lines without a terminal): the VM is shown interrupted, and nothing failed is ticked.
      const shown = await ctx.targon(
        UP.filter((arg) => arg !== '--json'),
        signalled(),
      )
      expect(shown.code, shown.stderr).toBe(143)
      expect(shown.stderr).toContain('failed (INTERRUPTED)')
      expect(shown.stderr).not.toContain('BOOTSTRAP_FAILED')
      expect(shown.stderr.split('\n').filter((line) => line.includes('✔') && line.includes('failed'))).toEqual([])
      expect(ctx.sim.billing()).toEqual([])
      const file = join(tempDir('targon-events-'), 'events.ndjson')
      const up = await ctx.targon([...UP, '--events-file', file], signalled())
      expect(parseJson(up).data.failed).toMatchObject([{error: {code: 'INTERRUPTED', message: 'interrupted by SIGTERM'}}])
      const events = parseEvents(readFileSync(file, 'utf8'))
      expect(events.filter((event) => event.error?.code === 'BOOTSTRAP_FAILED')).toEqual([])
      expect(events.filter((event) => event.type === 'phase' && event.status === 'failed').map((event) => event.error?.code)).toEqual([
        'INTERRUPTED',
      ])
      return up
    },
    vm: {dpkgLockSeconds: 30},
  },
  upInterrupted({
    args: NO_BOOT,
    name: 'process: SIGTERM in wait-running',
    signal: 'SIGTERM',
    sim: {provisioning: 'stuck'},
    when: (ctx) => ctx.sim.live().some((w) => w.status === 'provisioning'),
  }),
  {
    code: null,
    exit: 0,
    process: true,
    name: 'process: kill -9 right after create, then down --all from an empty config dir',
    run: async (ctx) => {
      const killed = await ctx.targon(NO_BOOT, {onSpawn: signalWhen(() => ctx.sim.live().length > 0, 'SIGKILL')})
      expect(killed.signal).toBe('SIGKILL')
      expect(ctx.sim.live()).toHaveLength(1)
      return ctx.targon(['down', '--all', '--json'], {config: tempDir('targon-empty-')})
    },
    sim: {provisioning: 'stuck'},
  },
  {
    process: true,
    code: null,
    exit: 0,
    name: 'process: two concurrent up runs in one fleet, then down --all',
    run: async (ctx) => {
      const results = await Promise.all([upNoBoot(ctx), upNoBoot(ctx)])
      expect(results.map((result) => result.code)).toEqual([0, 0])
      expect(ctx.sim.live()).toHaveLength(2)
      return ctx.targon(['down', '--all', '--json'])
    },
  },
  {
    code: 'API_ERROR',
    exit: 5,
    process: true,
    name: 'process: up while a cron down --all runs',
    run: async (ctx) => {
      const up = upNoBoot(ctx)
      await waitFor(() => ctx.sim.live().some((w) => w.status === 'provisioning'))
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(down.code).toBe(0)
      return up
    },
    sim: {bootDelayMs: 4000},
  },

  // ---- delete lifecycle (Targon's soft delete: tombstones, 500s, wake-then-delete, slow answers) ----
  {
    code: null,
    exit: 0,
    name: 'delete: the tombstone bounces to error before the first confirmation poll',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, uid}])
      expect(ctx.sim.current(uid)).toMatchObject({status: 'error', tombstone: true})
      return down
    },
    sim: {tombstoneBounceMs: 0},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: the tombstone bounces to error after the first confirmation poll; status hides it',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, uid}])
      await waitFor(() => ctx.sim.current(uid)?.status === 'error')
      const status = parseJson(await ctx.targon(['status', '--json']))
      expect(status.data.vms).toEqual([])
      expect(status.data.totals).toMatchObject({billing_count: 0, count: 0, price_per_hour: 0})
      const shown = parseJson(await ctx.targon(['status', '--json', '--show-deleted']))
      expect(shown.data.vms).toMatchObject([{billing: false, deleted: true, status: 'error', uid}])
      expect(shown.data.totals).toMatchObject({billing_count: 0, price_per_hour: 0})
      return down
    },
    sim: {tombstoneBounceMs: 1500},
  },
  {
    code: null,
    exit: 0,
    process: true,
    name: 'delete: cron down --all over tombstones stays green and sends no pointless DELETE, from a fresh config dir without history too',
    async run(ctx) {
      await Promise.all([oneVm(ctx), oneVm(ctx)])
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      await waitFor(() => [...ctx.sim.workloads.keys()].every((uid) => ctx.sim.current(uid)?.tombstone))
      const sent = deletesOf(ctx)
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      expect(deletesOf(ctx)).toBe(sent)
      // Without the server's history a fresh machine cannot tell a tombstone from a crash: status says so, and one
      // probe DELETE each settles it.
      const fresh = tempDir('targon-fresh-')
      const before = parseJson(await ctx.targon(['status', '--json'], {config: fresh}))
      expect(before.data.totals).toMatchObject({billing_count: 0, price_per_hour: 0, unknown_billing_count: 2})
      expect(deletesOf(ctx)).toBe(sent)
      const probed = await ctx.targon(['down', '--all', '--json'], {config: fresh})
      expect(probed.code).toBe(0)
      expect(resultsOf(probed).map((result) => result.action)).toEqual(['already-gone', 'already-gone'])
      expect(deletesOf(ctx)).toBe(sent + 2)
      const again = await ctx.targon(['down', '--all', '--json'], {config: fresh})
      expect(deletesOf(ctx)).toBe(sent + 2)
      expect(parseJson(await ctx.targon(['status', '--json'], {config: fresh})).data.totals.unknown_billing_count).toBe(0)
      return again
    },
    sim: {history: 'missing', tombstoneBounceMs: 100},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a DELETE answer slower than TARGON_HTTP_TIMEOUT is waited for, and sent once',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const down = await ctx.targon(['down', uid, '--json'], {env: {TARGON_HTTP_TIMEOUT: '1'}})
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', uid}])
      expect(deletesOf(ctx, uid)).toBe(1)
      return down
    },
    sim: {deleteLatencyMs: 2500},
  },
  {
    code: null,
    exit: 0,
    process: true,
    name: 'delete: two concurrent down --all runs from two config dirs never have two DELETEs of one VM in flight',
    async run(ctx) {
      const up = await upNoBoot(ctx, '--count', '3')
      expect(up.code).toBe(0)
      const [first, second] = await Promise.all([
        ctx.targon(['down', '--all', '--json']),
        ctx.targon(['down', '--all', '--json'], {config: tempDir('targon-other-')}),
      ])
      expect(second.code, second.stdout + second.stderr).toBe(0)
      expect(ctx.sim.doubleDeletes.size).toBe(0)
      expect(ctx.sim.maxInFlight.DELETE).toBeGreaterThanOrEqual(2)
      return first
    },
    sim: {deleteLatencyMs: 1500},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a suspended VM (DELETE answers 500) is woken, then deleted',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.suspend(uid)
      const status = parseJson(await ctx.targon(['status', '--json']))
      expect(status.data.vms).toMatchObject([{billing: true, status: 'suspended', uid}])
      expect(status.warnings.join(' ')).toContain(`targon down ${uid}`)
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid}])
      expect(ctx.sim.requests('POST', `/workloads/${uid}/deploy`)).toHaveLength(2)
      return down
    },
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a crashed VM is probed (500), woken and deleted by a cron run from an empty config dir',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.crash(uid)
      const down = await ctx.targon(['down', '--all', '--json'], {config: tempDir('targon-empty-')})
      expect(resultsOf(down)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid}])
      return down
    },
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a 503 on the wake-up deploy of a crashed VM: the deploy is sent again, and the VM is deleted',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.crash(uid)
      ctx.sim.inject({method: 'POST', path: `/workloads/${uid}/deploy`, status: 503, times: 1})
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid}])
      expect(ctx.sim.requests('POST', `/workloads/${uid}/deploy`).map((request) => request.status)).toEqual([200, 503, 200])
      return down
    },
  },
  {
    code: null,
    exit: 0,
    name: 'status: a VM passes through pending and powering_on on its way to running; up waits through them',
    async run(ctx) {
      const up = await upNoBoot(ctx)
      expect(ctx.sim.servedStatuses).toEqual(expect.arrayContaining(['pending', 'powering_on', 'running']))
      return up
    },
    sim: {bootDelayMs: 6000, transitional: true},
  },
  {
    code: null,
    exit: 0,
    name: 'status: a stopped VM bills; down wakes it (DELETE answers 500) and deletes it',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.powerOff(uid, 'stopped')
      const status = parseJson(await ctx.targon(['status', '--json']))
      expect(status.data.vms).toMatchObject([{billing: true, status: 'stopped', uid}])
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid}])
      return down
    },
  },
  {
    code: 'API_ERROR',
    exit: 5,
    process: true,
    name: 'status: a VM that powers off while up waits for it to run ends the wait, and is deleted',
    async run(ctx) {
      return ctx.targon(NO_BOOT, {
        onSpawn: () =>
          void waitFor(() => ctx.sim.live().some((w) => w.status === 'provisioning')).then(() =>
            ctx.sim.powerOff(ctx.sim.live()[0]!.uid, 'frozen'),
          ),
      })
    },
    sim: {provisioning: 'stuck'},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a DELETE answered 503 before it took effect is sent again, and the VM is deleted',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.inject({method: 'DELETE', path: `/workloads/${uid}`, status: 503, times: 1})
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, uid}])
      expect(ctx.sim.requests('DELETE', `/workloads/${uid}`).map((request) => request.status)).toEqual([503, 204])
      return down
    },
  },
  {
    code: 'INTERRUPTED',
    exit: 129,
    interrupts: true,
    name: 'process: SIGHUP during up --count 2 whose clean-up DELETE answers 503 once: sent again, nothing bills',
    run: (ctx) =>
      ctx.targon([...NO_BOOT, '--count', '2'], {
        // The unclear answer is looked into for a part of this window before the DELETE is sent again.
        env: {TARGON_RECONCILE_WINDOW: '3'},
        onSpawn: signalWhen(() => ctx.sim.live().filter((w) => w.status === 'provisioning').length === 2, 'SIGHUP'),
      }),
    setup: (ctx) => ctx.sim.inject({method: 'DELETE', path: /\/workloads\/[^/]+$/, status: 503, times: 1}),
    sim: {provisioning: 'stuck'},
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    interrupts: true,
    name: 'process: SIGINT while run rents its VM, whose slow DELETE answers 500 after deleting: what it rented goes, nothing bills, its tombstone is never deployed',
    async run(ctx) {
      const run = ['run', 'rtx6000b-small', '--max-price', '1.8', '--no-sync', '--json', '--', 'true']
      const result = await ctx.targon(run, {onSpawn: signalWhen(() => vmCalls(ctx).length > 0, 'SIGINT')})
      // The tombstone showed before the state after the 500 was read: a second DELETE (204) settled it, not a wake.
      expect(ctx.sim.requests('POST', '/deploy')).toHaveLength(1)
      expect(ctx.sim.requests('DELETE', /\/workloads\/[^/]+$/).map((request) => request.status)).toEqual([500, 204])
      return result
    },
    setup: (ctx) => ctx.sim.inject({method: 'DELETE', path: /\/workloads\/[^/]+$/, statusAfterCommit: 500, times: 1}),
    sim: {deleteLatencyMs: 1500, tombstoneBounceMs: 0},
    vm: {dpkgLockSeconds: 30},
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    interrupts: true,
    name: "dstack: SIGINT while scale rents for a waiting run: what it rented goes, nothing bills, and the next sync leaves dstack's fleet empty",
    async run(ctx) {
      const dstack = await startDstack()
      try {
        dstack.submitRun()
        const env = {TARGON_DSTACK_PROJECT: 'main', TARGON_DSTACK_TOKEN: DSTACK_TOKEN, TARGON_DSTACK_URL: dstack.url}
        const scale = ['dstack', 'scale', '--fleet', 'default', '--offer', 'rtx6000b-small', '--max-price', '1.8', '--max', '2', '--json']
        const interrupted = await ctx.targon(scale, {env, onSpawn: signalWhen(() => vmCalls(ctx).length > 0, 'SIGINT')})
        // It had rented a VM and was bootstrapping it: the VM is gone.
        expect(ctx.sim.workloads.size).toBe(1)
        expect(ctx.sim.billing()).toEqual([])
        const sync = await ctx.targon(['dstack', 'sync', '--fleet', 'default', '--json'], {env})
        expect(sync.code, sync.stdout + sync.stderr).toBe(0)
        expect(dstack.hosts('targon-default')).toEqual([])
        return interrupted
      } finally {
        await dstack.stop()
      }
    },
    vm: {dpkgLockSeconds: 30},
  },
  {
    code: 'API_ERROR',
    exit: 5,
    name: 'delete: a real crash while provisioning is rolled back by wake-then-delete',
    async run(ctx) {
      const up = await upNoBoot(ctx)
      expect(parseJson(up).data.cleanup.results).toMatchObject([{action: 'woken-and-deleted', billing: false}])
      return up
    },
    sim: {provisioning: 'error'},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a refused deploy leaves a registered leftover (DELETE 500); up names it and rents the next offer',
    async run(ctx) {
      const up = await ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap'])
      const doc = parseJson(up)
      expect(doc.data.leftovers).toHaveLength(1)
      expect(doc.data.vms[0].resource).toBe('rtx6000b-small-b')
      expect(doc.warnings.join(' ')).toContain(doc.data.leftovers[0].uid)
      expect(ctx.sim.workloads.get(doc.data.leftovers[0].uid)?.status).toBe('registered')
      const status = parseJson(await ctx.targon(['status', '--json']))
      expect(status.data.totals).toMatchObject({billing_count: 1, count: 2, price_per_hour: 1.79})
      return up
    },
    setup: (ctx) => ctx.sim.inject({...NO_CAPACITY_503, method: 'POST', path: '/deploy', times: 1}),
  },
  {
    code: null,
    exit: 0,
    name: 'delete: down --wake-registered deploys a registered leftover briefly to delete it',
    async run(ctx) {
      ctx.sim.inject({...NO_CAPACITY_503, method: 'POST', path: '/deploy', times: 1})
      const up = parseJson(await ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']))
      const leftover = up.data.leftovers[0].uid as string
      const plain = await ctx.targon(['down', '--all', '--json'])
      expect(plain.code).toBe(0)
      expect(resultsOf(plain).find((result) => result.uid === leftover)).toMatchObject({action: 'left-registered', billing: false})
      const woken = await ctx.targon(['down', '--all', '--wake-registered', '--json'])
      expect(resultsOf(woken)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid: leftover}])
      expect(ctx.sim.live()).toEqual([])
      return woken
    },
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a burst of 429s without Retry-After, longer than the retries of one poll, does not end wait-running',
    run: (ctx) => upNoBoot(ctx),
    setup: (ctx) => ctx.sim.inject({method: 'GET', path: '/state', status: 429, times: 9}),
  },
  {
    code: null,
    exit: 0,
    name: 'delete: 503s and connection resets while confirming a deletion',
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.inject({method: 'GET', path: '/state', status: 503, times: 5})
      ctx.sim.inject({method: 'GET', path: '/state', reset: true, times: 3})
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', uid}])
      return down
    },
  },
  {
    code: 'TIMEOUT',
    exit: 6,
    name: 'delete: up --timeout ran out, and the clean-up (a slow DELETE) still runs to the end',
    run: (ctx) => upNoBoot(ctx, '--timeout', '3s'),
    sim: {deleteLatencyMs: 4000, provisioning: 'stuck'},
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'delete: Ctrl-C during a wake-then-delete finishes that delete, then exits 130 with per-VM results',
    interrupts: true,
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.suspend(uid)
      const down = await ctx.targon(['down', uid, '--json'], {
        onSpawn: signalWhen(() => ctx.sim.requests('POST', `/workloads/${uid}/deploy`).length >= 2),
      })
      expect(parseJson(down).data.results).toMatchObject([{action: 'woken-and-deleted', billing: false, uid}])
      expect(ctx.sim.billing()).toEqual([])
      return down
    },
    sim: {bootDelayMs: 1500},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: a second Ctrl-C during a wake-then-delete exits at once and names the VM still billing',
    interrupts: true,
    async run(ctx) {
      const uid = await oneVm(ctx)
      ctx.sim.suspend(uid)
      const down = await ctx.targon(['down', uid], {
        onSpawn: (child) => {
          signalWhen(() => ctx.sim.requests('POST', `/workloads/${uid}/deploy`).length >= 2)(child)
          signalWhen(() => ctx.sim.requests('POST', `/workloads/${uid}/deploy`).length >= 2, 'SIGINT', 500)(child)
        },
      })
      expect(down.code).toBe(130)
      expect(down.stderr).toContain(`targon down ${uid}`)
      expect(ctx.sim.billing().map((workload) => workload.uid)).toEqual([uid])
      return ctx.targon(['down', '--all', '--json'])
    },
    sim: {bootDelayMs: 5000},
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'delete: SIGINT during down --all --json stops starting deletions and prints per-VM results',
    interrupts: true,
    async run(ctx) {
      expect((await upNoBoot(ctx, '--count', '3')).code).toBe(0)
      const down = await ctx.targon(['down', '--all', '--json', '--parallel', '1'], {onSpawn: signalWhen(() => deletesOf(ctx) >= 1)})
      const results = resultsOf(down)
      expect(results.map((result) => result.action).sort()).toEqual(['deleted', 'not-attempted', 'not-attempted'])
      expect(parseJson(down).data.survivors).toHaveLength(2)
      expect(ctx.sim.billing()).toHaveLength(2)
      return down
    },
    kept: 2,
    sim: {deleteLatencyMs: 1500},
  },
  {
    code: 'NOT_FOUND',
    exit: 4,
    name: 'delete: a typed uid that matches nothing exits 4; one this machine deleted stays already-gone',
    async run(ctx) {
      const uid = await oneVm(ctx)
      expect((await ctx.targon(['down', uid, '--json'])).code).toBe(0)
      await waitFor(() => !ctx.sim.live().length && Date.now() > (ctx.sim.workloads.get(uid)?.deletedAt ?? 0) + 600)
      const again = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(again)).toMatchObject([{action: 'already-gone', uid}])
      expect((await ctx.targon(['down', 'wrk-000000typo', '--ignore-missing', '--json'])).code).toBe(0)
      return ctx.targon(['down', 'wrk-000000typo', '--json'])
    },
    sim: {tombstoneLifetimeMs: 500},
  },
  {
    code: null,
    exit: 0,
    name: 'delete: the ideal lifecycle (204 in every state, then 404) still works',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const down = await ctx.targon(['down', uid, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', uid}])
      return down
    },
    sim: {deleteLifecycle: 'ideal'},
  },

  // ---- selection ----
  {
    code: null,
    exit: 0,
    kept: 2,
    name: 'selection: down NAME --fleet F deletes NAME alone, not the fleet',
    async run(ctx) {
      expect((await upNoBoot(ctx, '--fleet', 'exp', '--count', '2')).code).toBe(0)
      expect((await upNoBoot(ctx, '--fleet', 'exp', '--name', 'inst')).code).toBe(0)
      const down = await ctx.targon(['down', 'inst', '--fleet', 'exp', '--json'])
      expect(resultsOf(down).map((result) => result.action)).toEqual(['deleted'])
      expect(ctx.sim.billing().map((workload) => workload.name)).not.toContain('tcli-exp-inst')
      return down
    },
  },
  {
    code: null,
    exit: 0,
    name: 'selection: a registered leftover of an up --name race leaves the name unambiguous for down and up --name',
    async run(ctx) {
      expect((await upNoBoot(ctx, '--name', 'twin')).code).toBe(0)
      ctx.sim.addWorkload({name: 'tcli-default-twin', status: 'registered'})
      const adopted = await ctx.targon([...NO_BOOT, '--name', 'twin'])
      expect(adopted.code, adopted.stdout).toBe(0)
      const down = await ctx.targon(['down', 'twin', '--json'])
      expect(resultsOf(down).map((result) => result.action)).toEqual(['deleted'])
      return down
    },
  },
  {
    code: null,
    exit: 0,
    name: 'capacity: --count 2 on an offer listing 1 available rents the next offer for the second, leaving nothing registered',
    async run(ctx) {
      const up = await ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--count', '2', '--no-bootstrap', '--json'])
      expect(
        parseJson(up)
          .data.vms.map((vm: {resource: string}) => vm.resource)
          .sort(),
      ).toEqual(['rtx6000b-small', 'rtx6000b-small-b'])
      expect([...ctx.sim.workloads.values()].filter((workload) => workload.status === 'registered')).toEqual([])
      return up
    },
    sim: {capacitySchedule: [{atMs: 0, available: 1, offer: 'rtx6000b-small'}]},
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    interrupts: true,
    name: 'process: SIGINT during exec of a silent command ends the remote command at once',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const vm = ctx.sim.workloads.get(uid)!.name
      const exec = await ctx.targon(['exec', '--vms', vm, '--json', '--', 'sleep 53'], {
        onSpawn: signalWhen(() => running('^sleep 53$')),
      })
      expect(parseJson(exec).data.results).toMatchObject([{error: 'interrupted: the remote command was sent SIGTERM', exit_code: null}])
      // Its whole process group got SIGTERM: nothing of it runs on the VM.
      const check = await ctx.targon(['exec', '--vms', vm, '--', 'pgrep -x sleep || echo none'])
      expect(check.stdout.trim()).toBe(`${vm} | none`)
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      return exec
    },
    vms: true,
  },

  // ---- run ----
  {
    code: null,
    exit: 0,
    name: 'run: the SSH connection drops while it follows the job: it connects again, and the job goes on to its end',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const vm = ctx.sim.workloads.get(uid)!.name
      const run = ctx.targon(['run', vm, '--no-sync', '--json', '--', 'echo one; while [ ! -e /tmp/go-on ]; do sleep 0.2; done; echo two'])
      // The job runs once the VM's systemd-run has returned (the local command line names /tmp/go-on as well).
      const simVm = ctx.farm.vm(uid)
      await waitFor(
        () => simVm.timedCalls().some((call) => call.event === 'end' && call.call.startsWith('systemd-run --unit=targon-job-')),
        60_000,
      )
      // Every SSH session of the VM ends (sshd's own processes for ubuntu's connections, killed on the VM), the run's
      // among them, and this exec's own.
      await ctx.targon(['exec', '--vms', vm, '--', 'sudo pkill -f "^sshd: ubuntu"'])
      expect((await ctx.targon(['exec', '--vms', vm, '--', 'touch /tmp/go-on'])).code).toBe(0)
      const result = await run
      expect(parseJson(result).data).toMatchObject({exit_code: 0, job: {state: 'succeeded'}, tail: ['one', 'two']})
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      return result
    },
    vms: true,
  },
  {
    code: 'API_ERROR',
    exit: 5,
    name: 'run: the VM crashes during the job: the run says so, and the VM, still billing, is left to its limits and down',
    async run(ctx) {
      const uid = await oneVm(ctx)
      const vm = ctx.sim.workloads.get(uid)!.name
      // The crash comes once the run says the job started (--verbose: its progress on stderr beside --json), not
      // while it still starts it: the job's process on the VM shows earlier than the run's start ends.
      let progress = ''
      const run = ctx.targon(['run', vm, '--no-sync', '--json', '--verbose', '--', 'sleep 307'], {
        onSpawn: (child) => child.stderr?.on('data', (chunk: string) => (progress += chunk)),
      })
      await waitFor(() => /^Job \S+ started on /m.test(progress), 60_000)
      ctx.sim.crash(uid)
      const result = await run
      const doc = parseJson(result)
      expect(doc.error.message).toBe(`${vm} is error`)
      expect(doc.error.hint).toContain(`targon down ${vm}`)
      expect(doc.data.job).toMatchObject({state: 'running'})
      expect((await ctx.targon(['down', '--all', '--json'])).code).toBe(0)
      return result
    },
    vms: true,
  },

  // ---- sweep ----
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'sweep: Ctrl-C half way finishes the DELETE under way and exits 130; the next sweep deletes the rest',
    interrupts: true,
    async run(ctx) {
      const uids = await expiredVms(ctx, 3)
      // Each DELETE takes a second: the signal arrives while the first is in flight.
      ctx.sim.inject({delayMs: 1000, method: 'DELETE', path: /\/workloads\/[^/]+$/, times: 1})
      const sweep = await ctx.targon(['sweep', '--json', '--parallel', '1'], {onSpawn: signalWhen(() => deletesOf(ctx) >= 1)})
      const results = parseJson(sweep).data.results as {action: string; reason: string}[]
      expect(results.map((result) => result.action).sort()).toEqual(['deleted', 'not-attempted', 'not-attempted'])
      expect(results.every((result) => result.reason === 'ttl')).toBe(true)
      expect(ctx.sim.billing()).toHaveLength(2)
      // Nothing it left is hidden from the next one: still past its TTL, still selected.
      const next = await ctx.targon(['sweep', '--json'])
      expect(next.code, next.stdout + next.stderr).toBe(0)
      expect(ctx.sim.billing()).toEqual([])
      expect(uids.every((uid) => deletesOf(ctx, uid) === 1)).toBe(true)
      return sweep
    },
  },
  {
    code: null,
    exit: 0,
    name: 'sweep: a VM that hangs on the read of its limits is given up after 15 s; it and the others go by their records, and nothing past its TTL bills',
    vms: true,
    async run(ctx) {
      const up = await ctx.targon([...UP, '--count', '2', '--ttl', '1h'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const [hanging, other] = parseJson(up).data.vms as {name: string; uid: string}[]
      // The limits file becomes a FIFO that nobody writes: a read of it blocks for ever.
      const rigged = await ctx.targon([
        'exec',
        '--vms',
        hanging!.name,
        '--',
        `sudo rm -f ${LIMITS_FILE} && sudo mkfifo -m 0644 ${LIMITS_FILE}`,
      ])
      expect(rigged.code, rigged.stderr).toBe(0)
      for (const vm of [hanging!, other!]) expireTtl(ctx, vm.uid)
      const sweep = await ctx.targon(['sweep', '--json'])
      const results = parseJson(sweep).data.results as {uid: string; reason: string; billing: boolean}[]
      expect(results.map((result) => [result.uid, result.reason, result.billing]).sort()).toEqual(
        [
          [hanging!.uid, 'ttl', false],
          [other!.uid, 'ttl', false],
        ].sort(),
      )
      return sweep
    },
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: "sweep: the team guard's sweep, Ctrl-C half way with the owner's directory gone: the DELETE under way finishes, the next team sweep deletes the rest",
    interrupts: true,
    vms: true,
    async run(ctx) {
      const team = tempDir('targon-team-')
      writeConfigFile(team, {'api-key': DEFAULT_TOKEN, 'api-url': ctx.sim.url})
      const crontab = fakeCrontab()
      const installed = await ctx.targon(['guard', 'install', '--team', '--cron', '--json'], {config: team, env: {PATH: crontab.path}})
      expect(installed.code, installed.stdout + installed.stderr).toBe(0)
      const up = await ctx.targon([...UP, '--count', '3', '--ttl', '1h'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const vms = parseJson(up).data.vms as {name: string; uid: string}[]
      // Their deadlines pass as the files they carry say (a VM may tighten its limits); the owner's directory goes.
      const script = `import json; p = '${LIMITS_FILE}'; d = json.load(open(p)); d['ttl_expires_at'] = '2020-01-01T00:00:00Z'; json.dump(d, open(p, 'w'))`
      const expired = await ctx.targon(['exec', '--vms', vms.map((vm) => vm.name).join(','), '--', `sudo python3 -c "${script}"`])
      expect(expired.code, expired.stderr).toBe(0)
      rmSync(ctx.configDir, {force: true, recursive: true})
      ctx.sim.inject({delayMs: 1000, method: 'DELETE', path: /\/workloads\/[^/]+$/, times: 1})
      const sweep = await ctx.targon(['sweep', '--team', '--json', '--parallel', '1'], {
        config: team,
        onSpawn: signalWhen(() => deletesOf(ctx) >= 1),
      })
      const results = parseJson(sweep).data.results as {action: string; reason: string}[]
      expect(results.map((result) => result.action).sort()).toEqual(['deleted', 'not-attempted', 'not-attempted'])
      expect(results.every((result) => result.reason === 'ttl')).toBe(true)
      expect(ctx.sim.billing()).toHaveLength(2)
      const next = await ctx.targon(['sweep', '--team', '--json'], {config: team})
      expect(next.code, next.stdout + next.stderr).toBe(0)
      expect(ctx.sim.billing()).toEqual([])
      expect(vms.every((vm) => deletesOf(ctx, vm.uid) === 1)).toBe(true)
      return sweep
    },
  },
  {
    process: true,
    code: null,
    exit: 0,
    name: 'sweep: two sweeps at once: one deletes, the other exits 0 at once; each VM gets one DELETE',
    async run(ctx) {
      const uids = await expiredVms(ctx, 2)
      ctx.sim.inject({delayMs: 1500, method: 'DELETE', path: /\/workloads\/[^/]+$/})
      const [first, second] = await Promise.all([ctx.targon(['sweep', '--json']), ctx.targon(['sweep', '--json'])])
      const docs = [first, second].map((result) => parseJson(result).data)
      expect(docs.filter((doc) => doc.skipped !== null)).toHaveLength(1)
      expect(docs.find((doc) => doc.skipped === null).results).toHaveLength(2)
      expect(second.code, second.stdout + second.stderr).toBe(0)
      expect(uids.every((uid) => deletesOf(ctx, uid) === 1)).toBe(true)
      return first
    },
  },
  {
    code: null,
    exit: 0,
    name: 'sweep: a heartbeat URL that never answers costs 5 s and a warning; the VMs past their limit are deleted',
    async run(ctx) {
      await expiredVms(ctx, 1)
      const hanging = createServer(() => undefined)
      await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
      try {
        const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/ping/hang`
        const sweep = await ctx.targon(['sweep', '--json'], {env: {TARGON_HEARTBEAT_URL: url}})
        expect(parseJson(sweep).warnings.join('\n')).toContain('the heartbeat was not sent (no answer within 5 s)')
        expect(sweep.stdout + sweep.stderr).not.toContain('/ping/hang')
        return sweep
      } finally {
        hanging.closeAllConnections()
        await new Promise((resolve) => hanging.close(resolve))
      }
    },
  },

  // ---- pre-delete hooks ----
  {
    code: null,
    exit: 0,
    name: 'hook: a hook that hangs past --hook-timeout is stopped and reported; the VM is deleted',
    async run(ctx) {
      const up = await ctx.targon([...UP, '--on-delete', 'echo saving; sleep 600', '--hook-timeout', '2s'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const {name, uid} = parseJson(up).data.vms[0]
      const down = await ctx.targon(['down', name, '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'deleted', billing: false, hook: {output_tail: 'saving', status: 'timed-out'}, uid}])
      expect(parseJson(down).warnings.join('\n')).toContain(`${name}: hook timed-out`)
      return down
    },
    vms: true,
  },
  {
    code: null,
    exit: 0,
    name: 'hook: a hook that fails (exit 3) is reported, changes no exit code, and the sweep deletes the VM',
    async run(ctx) {
      const up = await ctx.targon([...UP, '--ttl', '1h', '--on-delete', 'echo "cannot save" >&2; exit 3'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const {name, uid} = parseJson(up).data.vms[0]
      expireTtl(ctx, uid)
      const sweep = await ctx.targon(['sweep', '--json'])
      expect(resultsOf(sweep)).toMatchObject([
        {action: 'deleted', billing: false, hook: {exit_code: 3, output_tail: 'cannot save', status: 'failed'}, reason: 'ttl', uid},
      ])
      expect(parseJson(sweep).warnings.join('\n')).toContain(`${name}: hook failed after`)
      return sweep
    },
    vms: true,
  },
  {
    code: null,
    exit: 0,
    name: 'hook: a VM unreachable for its hook (sshd gone) is deleted without it, and that is said',
    async run(ctx) {
      const up = await ctx.targon([...UP, '--on-delete', 'touch ~/never'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const {name, uid} = parseJson(up).data.vms[0]
      await ctx.farm.stopVm(uid)
      // Its sshd is tried again for TARGON_SSH_CONNECT_TIMEOUT (30 s by default), then given up.
      const started = Date.now()
      const down = await ctx.targon(['down', name, '--json'], {env: {TARGON_SSH_CONNECT_TIMEOUT: '2'}})
      expect(Date.now() - started).toBeLessThan(20_000)
      // Its jobs cannot be read either: unknown, and it is deleted all the same.
      expect(resultsOf(down)).toMatchObject([
        {action: 'deleted', billing: false, ended_jobs: null, hook: {exit_code: null, status: 'unreachable'}, uid},
      ])
      expect(parseJson(down).warnings.join('\n')).toMatch(
        new RegExp(`${name}: hook not run: could not reach it .*deleted without its hook`),
      )
      return down
    },
    vms: true,
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'hook: Ctrl-C while hooks run stops them and deletes every VM at once; nothing bills',
    interrupts: true,
    async run(ctx) {
      const up = await ctx.targon([...UP, '--count', '2', '--on-delete', 'sleep 600'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const startedAt = Date.now()
      const down = await ctx.targon(['down', '--all', '--yes', '--json'], {onSpawn: signalWhen(() => running('sleep 600'), 'SIGINT', 500)})
      // Well within the 10-minute default timeout of the hooks.
      expect(Date.now() - startedAt).toBeLessThan(60_000)
      const results = resultsOf(down) as {action: string; hook?: {status: string}}[]
      expect(results.map((result) => `${result.action} ${result.hook?.status}`)).toEqual(['deleted interrupted', 'deleted interrupted'])
      expect(ctx.sim.billing()).toEqual([])
      return down
    },
    vms: true,
  },
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'hook: Ctrl-C during the hook of run --down, after the job, stops the hook and deletes the VM at once; nothing bills',
    interrupts: true,
    async run(ctx) {
      const up = await ctx.targon([...UP, '--on-delete', 'sleep 601'])
      expect(up.code, up.stdout + up.stderr).toBe(0)
      const {name, uid} = parseJson(up).data.vms[0]
      const startedAt = Date.now()
      const run = await ctx.targon(['run', name, '--down', '--no-sync', '--json', '--', 'true'], {
        onSpawn: signalWhen(() => running('^sleep 601$'), 'SIGINT', 500),
      })
      // Well within the 10-minute default timeout of the hook, and with one signal: the second would exit at once.
      expect(Date.now() - startedAt).toBeLessThan(60_000)
      const doc = parseJson(run)
      expect(doc.data.job).toMatchObject({down: true, state: 'succeeded'})
      expect(doc.data.deleted).toMatchObject([{action: 'deleted', billing: false, hook: {status: 'interrupted'}, uid}])
      expect(doc.error.hint).toBe(`${name} was deleted, as targon run --down asked`)
      expect(running('^sleep 601$')).toBe(false)
      expect(ctx.sim.billing()).toEqual([])
      return run
    },
    vms: true,
  },

  // ---- local ----
  {
    code: 'CONFIG',
    exit: 3,
    name: 'local: a corrupt config file (the error names it)',
    run: async (ctx) => {
      writeFileSync(join(ctx.configDir, 'config.json'), '{"org": ', {mode: 0o600})
      const result = await upNoBoot(ctx)
      expect(parseJson(result).error.message).toContain(join(ctx.configDir, 'config.json'))
      return result
    },
  },
  {code: 'CONFIG', exit: 3, name: 'local: an unwritable config dir', run: (ctx) => ctx.targon(NO_BOOT, {config: '/proc/version/targon'})},
  {
    code: null,
    exit: 0,
    name: 'local: a notify URL without a scheme in the environment of a cron down --all: deleted all the same, with a warning',
    run: async (ctx) => {
      const broken = {TARGON_NOTIFY_URL: 'hooks.example.com/services/T/B/secret'}
      await oneVm(ctx)
      const down = await ctx.targon(['down', '--all', '--json'], {env: broken})
      expect(parseJson(down).warnings.join('\n')).toContain('TARGON_NOTIFY_URL is not a URL: this run sends no notification')
      expect(down.stdout + down.stderr).not.toContain('secret')
      expect(resultsOf(down).map((result) => result.action)).toEqual(['deleted'])
      return down
    },
  },
  {
    code: 'CONFIG',
    exit: 3,
    name: 'local: a private key readable by others is refused',
    run: async (ctx) => {
      expect((await ctx.targon(['down', '--all', '--json', '--dry-run'])).code).toBe(0)
      expect((await upNoBoot(ctx)).code).toBe(0)
      expect((await ctx.targon(['down', '--all'])).code).toBe(0)
      chmodSync(join(ctx.configDir, 'keys', 'id_ed25519'), 0o644)
      return upNoBoot(ctx)
    },
  },
  {
    code: null,
    exit: 0,
    name: 'local: the private key is missing while its public key is still registered',
    run: async (ctx) => {
      expect((await upNoBoot(ctx)).code).toBe(0)
      rmSync(join(ctx.configDir, 'keys'), {force: true, recursive: true})
      const again = await upNoBoot(ctx)
      expect(again.code).toBe(0)
      expect(ctx.sim.sshKeys.size).toBe(2)
      return ctx.targon(['down', '--all', '--json'])
    },
  },
  // ---- the server's history of a workload (GET …/events) ----
  {
    code: null,
    exit: 0,
    name: 'history: the endpoint is missing (404): a crashed VM seen from a fresh directory is billing unknown, and down --all deletes it',
    async run(ctx) {
      const crashed = ctx.sim.addWorkload({deployedAt: Date.now() - 60_000, name: 'tcli-default-crashed', status: 'running'})
      ctx.sim.crash(crashed.uid)
      const status = await ctx.targon(['status', '--json'])
      expect(status.code, status.stderr).toBe(0)
      expect(parseJson(status).data.vms).toMatchObject([{billing: null, uid: crashed.uid}])
      expect(ctx.sim.requests('GET', '/events').map((request) => request.status)).toEqual([404])
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(resultsOf(down)).toMatchObject([{action: 'woken-and-deleted', billing: false, uid: crashed.uid}])
      return down
    },
    sim: {history: 'missing'},
  },
  {
    code: null,
    exit: 0,
    name: 'history: hostile events leave a tombstone billing unknown, never deleted; down --all sends it one DELETE (204)',
    async run(ctx) {
      const gone = deletedElsewhere(ctx)
      const status = await ctx.targon(['status', '--json'])
      expect(status.code, status.stderr).toBe(0)
      expect(parseJson(status).data.vms).toMatchObject([{billing: null, deleted: false, uid: gone.uid}])
      expect(status.stdout + status.stderr).not.toContain('\u001b')
      const down = await ctx.targon(['down', '--all', '--json'])
      expect(deletesOf(ctx, gone.uid)).toBe(1)
      return down
    },
    sim: {history: 'hostile', tombstoneBounceMs: 0},
  },
  {
    code: null,
    exit: 0,
    name: 'history: reads answered 503 leave the record unknown, and keep no verdict: the next run asks again and learns',
    async run(ctx) {
      const gone = deletedElsewhere(ctx)
      ctx.sim.inject({path: '/events', status: 503})
      const first = await ctx.targon(['credits', '--json'])
      expect(first.code, first.stderr).toBe(0)
      expect(parseJson(first).data).toMatchObject({burn_usd_per_hour: 0, uncertain_vms: [gone.uid]})
      const asked = ctx.sim.requests('GET', '/events').length
      expect(asked).toBeLessThanOrEqual(2)
      ctx.sim.clearFaults()
      const again = await ctx.targon(['credits', '--json'])
      expect(parseJson(again).data.uncertain_vms).toEqual([])
      expect(ctx.sim.requests('GET', '/events').length).toBeGreaterThan(asked)
      return ctx.targon(['down', '--all', '--json'])
    },
    sim: {tombstoneBounceMs: 0},
  },
  {
    code: null,
    exit: 0,
    name: 'history: an endpoint that hangs holds down --all up for its own short budget only: it still deletes what bills',
    async run(ctx) {
      const gone = deletedElsewhere(ctx)
      const crashed = ctx.sim.addWorkload({deployedAt: Date.now() - 60_000, name: 'tcli-default-crashed', status: 'running'})
      ctx.sim.crash(crashed.uid)
      ctx.sim.inject({delayMs: 120_000, path: '/events'})
      const started = Date.now()
      const down = await ctx.targon(['down', '--all', '--json'])
      // The run's 20 s for history reads, and the deletion: far from the 4 attempts of 60 s of an ordinary read.
      expect(Date.now() - started).toBeLessThan(60_000)
      expect(down.code, down.stderr).toBe(0)
      const byUid = new Map(resultsOf(down).map((result) => [result.uid, result]))
      expect(byUid.get(crashed.uid)).toMatchObject({action: 'woken-and-deleted', billing: false})
      expect(byUid.get(gone.uid)).toMatchObject({billing: false})
      for (const uid of [gone.uid, crashed.uid]) expect(ctx.sim.requests('GET', `/${uid}/events`).length).toBeLessThanOrEqual(2)
      return down
    },
    sim: {tombstoneBounceMs: 0},
  },
]

/**
 * What a scenario needs, which decides where it runs: `vms`, simulated VMs, on the real clock, its runs in process but
 * for those the fixture makes processes (signalled, or beside another run); `process`, a signal, or a process of the
 * CLI's own for every run (a watched spawn, two runs at once: the scenario's `process`), on the real clock: a
 * scenario without `process` runs in process but for its signalled runs, as with VMs; `none`, neither: it runs in process,
 * on a clock that skips every wait (test/helpers/fake-clock.ts), shared with the simulator.
 */
export type Need = 'vms' | 'process' | 'none'

export function needOf(scenario: Scenario): Need {
  if (bootsVms(scenario)) return 'vms'
  return scenario.interrupts || scenario.process ? 'process' : 'none'
}

/** By default only scenarios that bootstrap boot VMs: the default run, or a `vm` scenario. */
function bootsVms(scenario: Scenario): boolean {
  return scenario.vms ?? (scenario.vm !== undefined || scenario.run === undefined)
}

/**
 * The files that run the matrix, by what their scenarios need; a need with more than one part spreads its scenarios
 * over that many files (every n-th scenario to each), which vitest's workers run side by side.
 */
export const FAULT_MATRIX_FILES: {file: string; need: Need; part: number; parts: number}[] = [
  {file: 'test/cmd/faults-1.test.ts', need: 'none', part: 1, parts: 2},
  {file: 'test/cmd/faults-2.test.ts', need: 'none', part: 2, parts: 2},
  {file: 'test/e2e/faults-process-1.test.ts', need: 'process', part: 1, parts: 2},
  {file: 'test/e2e/faults-process-2.test.ts', need: 'process', part: 2, parts: 2},
  {file: 'test/e2e/faults-vms-1.test.ts', need: 'vms', part: 1, parts: 3},
  {file: 'test/e2e/faults-vms-2.test.ts', need: 'vms', part: 2, parts: 3},
  {file: 'test/e2e/faults-vms-3.test.ts', need: 'vms', part: 3, parts: 3},
]

/** The scenarios that need `need`, and of them every `parts`-th from `part` (1-based): files that vitest's workers share. */
export function scenariosOf(need: Need, part = 1, parts = 1): Scenario[] {
  return scenarios.filter((scenario) => needOf(scenario) === need).filter((_, index) => index % parts === part - 1)
}

/** Registers the runs of the scenarios that need `need` (part `part` of `parts` of them: scenariosOf). */
export function faultMatrix(need: Need, part = 1, parts = 1): void {
  describe(`fault matrix (${need === 'none' ? 'in process' : `needs ${need}`}${parts > 1 ? `, part ${part} of ${parts}` : ''})`, () => {
    let ctx: Context | undefined
    afterEach(async () => {
      await ctx?.farm.stopAll()
      await ctx?.sim.stop()
      ctx = undefined
    })

    if (need === 'none')
      it('has at least 25 scenarios', () => {
        expect(scenarios.length).toBeGreaterThanOrEqual(25)
      })

    // Split by scenario, so that both variants of one run in the same file, one after the other: run side by side,
    // one variant's remote process (e.g. "sleep 53", found with pgrep on this machine) would signal the other early.
    const runs = scenariosOf(need, part, parts).flatMap((scenario) =>
      scenario.interrupts
        ? CONFIG_FILE_VARIANTS.map((variant) => ({prepare: variant.prepare, scenario, title: `${scenario.name} (${variant.label})`}))
        : [{prepare: (_dir: string) => {}, scenario, title: scenario.name}],
    )
    for (const {prepare, scenario, title} of runs) {
      it(`fault: ${title}`, async () => {
        // A scenario marked `process` runs every run as one: two runs at once must start alike to race as they would
        // (one in process starts seconds before a process under load). The others run in process but for their
        // signalled runs (the fixture makes those processes): on the real clock with VMs or signals, else on the
        // skipping clock.
        const inProcess = need !== 'process' || !scenario.process
        const clock = need === 'none' ? skippingClock() : undefined
        // With VMs, a first deploy is answered once its VM runs (as in the other VM files); the scenarios with a deploy
        // timing (early SSH) keep it booting while provisioning.
        const sim = new TargonSimulator({
          answerDeployOnceBooted: need === 'vms',
          bootDelayMs: 200,
          ...(clock ? {clock: clock.simulator} : {}),
          ...scenario.sim,
        })
        await sim.start()
        const farm = new VmFarm(sim, () => scenario.vm ?? {})
        if (!bootsVms(scenario)) sim.options.onBoot = sim.options.onDeleted = undefined
        const configDir = tempDir('targon-config-')
        prepare(configDir)
        ctx = {
          configDir,
          farm,
          sim,
          targon: targonFor(() => ({clock, configDir, sim}), {
            defaults: {timeoutMs: 90_000},
            inProcess,
            env: {TARGON_SHIM_HEALTH_TIMEOUT: '3', TARGON_STATE_WATCH_INTERVAL: '0.5'},
          }),
        }
        await scenario.setup?.(ctx)
        const result = await (scenario.run ?? ((c: Context) => c.targon(UP)))(ctx)
        const doc = parseJson(result)
        expect(result.code, result.stdout + result.stderr).toBe(scenario.exit)
        if (scenario.code === null) {
          expect(doc.ok).toBe(true)
        } else {
          expect(doc).toMatchObject({error: {code: scenario.code, exit_code: scenario.exit}, ok: false})
          expect(doc.error.message.length).toBeGreaterThan(0)
        }

        // The ledger: nothing bills, except what a successful up reported or a scenario kept.
        const reported: string[] = doc.ok && doc.command === 'up' ? doc.data.vms.map((vm: {uid: string}) => vm.uid) : []
        const billing = () =>
          sim
            .billing()
            .map((workload) => workload.uid)
            .sort()
        expect(billing()).toEqual(scenario.kept ? billing() : reported.sort())
        expect(sim.billing()).toHaveLength(scenario.kept ?? reported.length)
        // A final cron run, from an empty config directory and without the scenario's faults, deletes the rest and names
        // every registered leftover (Targon refuses to delete them; they do not run). In process in every part: nothing
        // else runs by then, and what it checks is the ledger, not the process.
        sim.clearFaults()
        const cron = await ctx.targon(['down', '--all', '--json'], {config: tempDir('targon-cron-'), inProcess: true})
        expect(cron.code, cron.stdout + cron.stderr).toBe(0)
        const leftRegistered = parseJson(cron)
          .data.results.filter((result: {action: string}) => result.action === 'left-registered')
          .map((result: {uid: string}) => result.uid)
        expect(
          sim
            .live()
            .map((workload) => workload.uid)
            .sort(),
        ).toEqual(leftRegistered.sort())
        expect(sim.billing().map((workload) => `${workload.name} ${workload.status}`)).toEqual([])
        expect([...sim.doubleDeletes]).toEqual([])
      }, 150_000)
    }
  })
}
