/**
 * The fault matrix: each scenario runs the built CLI against the simulator (and simulated VMs
 * where SSH is involved) and asserts the exit code, the JSON envelope, and the simulator's
 * ledger: nothing live afterwards, unless the scenario kept something with --on-failure keep.
 * RELIABILITY.md describes every scenario.
 */
import {type ChildProcess} from 'node:child_process'
import {chmodSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {afterEach, beforeAll, describe, expect, it} from 'vitest'

import {type CliResult, parseJson, runCli, tempDir} from '../helpers/cli.js'
import {DEFAULT_TOKEN, type SimulatorOptions, TargonSimulator} from '../simulator/simulator.js'
import {VmFarm, type VmScenario, assertVmSupport} from '../vm/farm.js'

interface Context {
  sim: TargonSimulator
  farm: VmFarm
  configDir: string
  /** Runs targon with this scenario's simulator and config directory. */
  targon: (args: string[], options?: {env?: Record<string, string>; onSpawn?: (child: ChildProcess) => void; config?: string}) => Promise<CliResult>
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
}

const UP = ['up', 'rtx6000b-small', '--max-price', '1.8', '--json']
const NO_BOOT = [...UP, '--no-bootstrap']
const upNoBoot = (ctx: Context, ...extra: string[]) => ctx.targon([...NO_BOOT, ...extra])

/** Waits until `ready` holds, then sends `signal` to the CLI. */
function signalWhen(ready: () => boolean, signal: NodeJS.Signals = 'SIGINT', extraDelayMs = 0) {
  return (child: ChildProcess) => {
    const timer = setInterval(() => {
      if (!ready()) return
      clearInterval(timer)
      setTimeout(() => child.kill(signal), extraDelayMs)
    }, 50)
    child.on('close', () => clearInterval(timer))
  }
}

const vmCalls = (ctx: Context) => [...ctx.farm.vms.values()].flatMap((vm) => vm.calls())

const scenarios: Scenario[] = [
  // ---- API ----
  {code: 'AUTH', exit: 3, name: 'API: 401 on create', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({method: 'POST', path: /\/workloads$/, status: 401})},
  {code: 'AUTH', exit: 3, name: 'API: 403 on the org', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({path: '/ssh-keys', status: 403})},
  {code: 'INSUFFICIENT_CREDITS', exit: 10, name: 'API: deploy refused for credits (402) on every offer', run: (ctx) => ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']), setup: (ctx) => ctx.sim.inject({method: 'POST', path: '/deploy', status: 402})},
  {code: 'NO_CAPACITY', exit: 10, name: 'API: deploy refused for capacity (409) on every offer', run: (ctx) => ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']), setup: (ctx) => ctx.sim.inject({method: 'POST', path: '/deploy', status: 409})},
  {code: null, exit: 0, name: 'API: deploy 500 on the first offer, success on the next', run: (ctx) => ctx.targon(['up', '--gpu', 'rtx6000b', '--max-price', '1.8', '--json', '--no-bootstrap']), setup: (ctx) => ctx.sim.inject({method: 'POST', path: '/deploy', status: 500, times: 1})},
  {code: null, exit: 0, name: 'API: create committed but its answer lost', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({dropAfterCommit: true, method: 'POST', path: /\/workloads$/, times: 1})},
  {code: null, exit: 0, name: 'API: create answered by an HTML 502 page from a proxy (retried once after reconciling)', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({body: '<html><h1>502 Bad Gateway</h1></html>', contentType: 'text/html', method: 'POST', path: /\/workloads$/, status: 502, times: 1})},
  {code: null, exit: 0, name: 'API: a 5xx burst while polling the state', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({method: 'GET', path: '/state', status: 503, times: 3})},
  {code: null, exit: 0, name: 'API: a 429 storm with Retry-After while polling the state', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({method: 'GET', path: '/state', retryAfter: '1', status: 429, times: 3})},
  {code: 'API_ERROR', exit: 5, name: 'API: the state turns to error', run: (ctx) => upNoBoot(ctx), sim: {provisioning: 'error'}},
  {code: 'TIMEOUT', exit: 6, name: 'API: stuck in provisioning until the timeout', run: (ctx) => upNoBoot(ctx, '--timeout', '3s'), sim: {provisioning: 'stuck'}},
  {
    code: 'API_ERROR',
    exit: 5,
    name: 'API: the workload deleted externally while waiting',
    run: (ctx) => ctx.targon(NO_BOOT, {onSpawn: () => void waitFor(() => ctx.sim.live().some((w) => w.status === 'provisioning')).then(() => ctx.sim.live().forEach((w) => ctx.sim.deleteExternally(w.uid)))}),
    sim: {provisioning: 'stuck'},
  },
  {code: 'PRICE_CAP_EXCEEDED', exit: 9, name: 'API: the price changed between listing and create', run: (ctx) => upNoBoot(ctx), sim: {priceDrift: 0.2}},
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
      const uid = parseJson((await upNoBoot(ctx))).data.vms[0].uid as string
      ctx.sim.deleteExternally(uid)
      return ctx.targon(['down', uid, '--json'])
    },
    sim: {afterDelete: 'deleted'},
  },
  {code: 'BAD_RESPONSE', exit: 5, name: 'API: a malformed JSON body', run: (ctx) => upNoBoot(ctx), setup: (ctx) => ctx.sim.inject({body: '{"items": [{"slug": "ac', path: '/tha/v3/orgs', status: 200})},

  // ---- SSH ----
  {code: 'SSH_FAILED', exit: 7, name: 'SSH: sshd never comes up', run: (ctx) => ctx.targon([...UP, '--timeout', '12s']), vm: {sshdDelaySeconds: 999}},
  {code: 'SSH_FAILED', exit: 7, name: 'SSH: the key is rejected', vm: {rejectKey: true}},
  {
    code: 'HOST_KEY_MISMATCH',
    exit: 7,
    name: 'SSH: the host key changed (the adopted VM is deleted with --on-failure delete)',
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
        onSpawn: () => void waitFor(() => vmCalls(ctx).length > 0).then(() => [...ctx.farm.vms.values()].forEach((vm) => vm.dropConnections())),
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
  {code: 'BOOTSTRAP_FAILED', exit: 8, name: 'SSH: the shim is unhealthy', vm: {shimUnhealthy: true}},

  // ---- process ----
  {code: 'INTERRUPTED', exit: 130, name: 'process: SIGINT in register (create in flight)', run: (ctx) => ctx.targon(NO_BOOT, {onSpawn: signalWhen(() => ctx.sim.requests('POST', /\/workloads$/).length > 0, 'SIGINT', 200)}), setup: (ctx) => ctx.sim.inject({delayMs: 1500, method: 'POST', path: /\/workloads$/})},
  {
    code: 'INTERRUPTED',
    exit: 130,
    name: 'process: SIGINT while a fleet has 8 creates in flight and one waiting for a slot',
    async run(ctx) {
      const result = await ctx.targon([...NO_BOOT, '--count', '9'], {onSpawn: signalWhen(() => ctx.sim.requests('POST', /\/workloads$/).length >= 8, 'SIGINT', 200)})
      expect(ctx.sim.maxInFlight.POST).toBe(8)
      return result
    },
    setup: (ctx) => ctx.sim.inject({delayMs: 1500, method: 'POST', path: /\/workloads$/}),
  },
  {code: 'INTERRUPTED', exit: 130, name: 'process: SIGINT in deploy', run: (ctx) => ctx.targon(NO_BOOT, {onSpawn: signalWhen(() => ctx.sim.requests('POST', '/deploy').length > 0, 'SIGINT', 200)}), setup: (ctx) => ctx.sim.inject({delayMs: 1500, method: 'POST', path: '/deploy'})},
  {code: 'INTERRUPTED', exit: 130, name: 'process: SIGINT in wait-running', run: (ctx) => ctx.targon(NO_BOOT, {onSpawn: signalWhen(() => ctx.sim.live().some((w) => w.status === 'provisioning'))}), sim: {provisioning: 'stuck'}},
  {code: 'INTERRUPTED', exit: 130, name: 'process: SIGINT in install', run: (ctx) => ctx.targon(UP, {onSpawn: signalWhen(() => vmCalls(ctx).length > 0)}), vm: {dpkgLockSeconds: 30}},
  {code: 'INTERRUPTED', exit: 130, name: 'process: SIGINT in shim-start', run: (ctx) => ctx.targon(UP, {onSpawn: signalWhen(() => vmCalls(ctx).some((call) => call.includes('restart dstack-shim')))}), vm: {shimUnhealthy: true}},
  {code: 'INTERRUPTED', exit: 143, name: 'process: SIGTERM in wait-running', run: (ctx) => ctx.targon(NO_BOOT, {onSpawn: signalWhen(() => ctx.sim.live().some((w) => w.status === 'provisioning'), 'SIGTERM')}), sim: {provisioning: 'stuck'}},
  {
    code: null,
    exit: 0,
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
]

async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached')
    await sleep(50)
  }
}

beforeAll(() => {
  assertVmSupport()
})

describe('fault matrix', () => {
  let ctx: Context | undefined
  afterEach(async () => {
    await ctx?.farm.stopAll()
    await ctx?.sim.stop()
    ctx = undefined
  })

  it('has at least 25 scenarios', () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(25)
  })

  for (const scenario of scenarios) {
    it(`fault: ${scenario.name}`, async () => {
      const sim = new TargonSimulator({bootDelayMs: 200, ...scenario.sim})
      await sim.start()
      const farm = new VmFarm(sim, () => scenario.vm ?? {})
      const configDir = tempDir('targon-config-')
      ctx = {
        configDir,
        farm,
        sim,
        targon: (args, options = {}) =>
          runCli(args, {
            env: {TARGON_API_KEY: DEFAULT_TOKEN, TARGON_API_URL: sim.url, TARGON_CONFIG_DIR: options.config ?? configDir, TARGON_SHIM_HEALTH_TIMEOUT: '3', ...options.env},
            onSpawn: options.onSpawn,
            timeoutMs: 90_000,
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

      // The ledger: nothing live or registered, except what a successful up reported or a scenario kept.
      const reported: string[] = doc.ok && doc.command === 'up' ? doc.data.vms.map((vm: {uid: string}) => vm.uid) : []
      expect(sim.live().map((workload) => workload.uid).sort()).toEqual(scenario.kept ? sim.live().map((workload) => workload.uid).sort() : reported.sort())
      expect(sim.live()).toHaveLength(scenario.kept ?? reported.length)
      if (sim.live().length > 0) expect((await ctx.targon(['down', '--all'])).code).toBe(0)
      expect(sim.live().map((workload) => `${workload.name} ${workload.status}`)).toEqual([])
    }, 150_000)
  }
})
