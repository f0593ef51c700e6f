/**
 * The install and shim-start phases, over one SSH connection per VM: wait for SSH (pinning the
 * host key on first contact), run the bootstrap script, then start dstack-shim and check its
 * health through a tunnel. The script itself lives in bootstrap/. A VM still booting is
 * bootstrapped against its state watch: SSH starts at its first address, and a VM that fails
 * meanwhile stops the bootstrap and is the error reported.
 */
import {hasHook, storeHook} from '../../domain/hooks/hook.js'
import {readFileSync} from 'node:fs'

import {configureIdle} from '../../adapters/bootstrap/idle-config.js'
import {writeVmLimits} from '../../adapters/bootstrap/vm-limits.js'
import {limitsFile} from '../../domain/fleet/limits.js'
import {runInstall} from '../../adapters/bootstrap/runner.js'
import {runShim} from '../../adapters/bootstrap/shim.js'
import type {StepEvent} from '../../adapters/bootstrap/steps.js'
import {withConsoleTail} from '../logs/logs.js'
import {pinHostKey, readPin} from '../../adapters/ssh/pins.js'
import {SshSession} from '../../adapters/ssh/session.js'
import type {Provisioning} from './provisioning.js'
import type {Booting, Bootstrapped, Ready, Running, StateWatch} from './stages.js'
import {WAIT_RUNNING_MS} from './wait-running.js'

/** How long sshd may take to answer once the VM runs (for a VM still booting, once it may have booted). */
const SSH_WAIT_MS = 10 * 60_000
/** How long before the run's deadline the last SSH attempt starts. */
const LAST_ATTEMPT_MARGIN_MS = 3000
/** An attempt costs one TCP connection: a VM that answers SSH soon after its address shows is not kept waiting long. */
const SSH_RETRY_MAX_MS = 3000

/**
 * Install, from a running VM or from one still booting (then as soon as its state carries an address). `reachable`
 * marks the phase's real start: the first SSH attempt.
 */
export async function install(
  ctx: Provisioning,
  from: Booting | Running,
  bootstrap: NonNullable<Provisioning['request']['bootstrap']>,
  onEvent: (event: StepEvent) => void,
  reachable: () => void,
): Promise<Bootstrapped> {
  const watch = from.kind === 'booting' ? from.watch : null
  return watched(ctx, watch, async (signal) => {
    const endpoint = from.kind === 'running' ? from.endpoint : await from.watch.address
    reachable()
    return installAt(ctx, {...from, endpoint}, watch, signal, bootstrap, onEvent)
  })
}

async function installAt(
  ctx: Provisioning,
  from: (Booting | Running) & {endpoint: Running['endpoint']},
  watch: StateWatch | null,
  signal: AbortSignal,
  bootstrap: NonNullable<Provisioning['request']['bootstrap']>,
  onEvent: (event: StepEvent) => void,
): Promise<Bootstrapped> {
  const {claim, endpoint} = from
  const {configDir, org} = ctx.request
  const pinned = readPin(configDir, claim.uid)
  let retries = 0
  // While the VM boots, SSH may take as long as booting may; once the state says running, SSH_WAIT_MS more at most.
  // The last attempt comes a moment before the run's own deadline, so that an sshd that never answers is the error
  // reported (SSH_FAILED), not the time-out that would otherwise end the run while that attempt fails.
  const {clock} = ctx
  let deadline = Math.min(ctx.deadline.at - LAST_ATTEMPT_MARGIN_MS, clock.now() + SSH_WAIT_MS + (watch ? WAIT_RUNNING_MS : 0))
  void watch?.running.then(
    () => (deadline = Math.min(deadline, clock.now() + SSH_WAIT_MS)),
    () => undefined,
  )
  const ssh = await SshSession.open({
    clock,
    // Read on every attempt, so that it moves in once the VM runs.
    get deadline() {
      return deadline
    },
    host: endpoint.host,
    maxRetryDelayMs: SSH_RETRY_MAX_MS,
    // Refusals are expected while the VM boots: said once, not on every attempt.
    onRetry: (reason) => retries++ === 0 && ctx.warn(`waiting for SSH on ${claim.name} (${reason}); retrying with back-off`),
    pinned,
    port: endpoint.port,
    privateKey: readFileSync(ctx.request.identityFile),
    signal,
    username: 'ubuntu',
  }).catch(async (error: unknown) => {
    // SSH never came up: the console says why (read without the run's signal, which may have expired).
    throw await withConsoleTail(ctx.cleanupClient, org, claim, error)
  })
  try {
    const {hostKey} = ssh
    if (!pinned) pinHostKey(ctx.state, {name: claim.name, org: ctx.request.org, uid: claim.uid}, endpoint, hostKey)

    const password = ctx.state.readVm(org, claim.name)?.password
    const {marker, shim} = await runInstall(ssh, {...bootstrap.params, password}, onEvent, signal, bootstrap.shim, ctx.clock)
    // Two channels of the one connection at once: the idle settings and the hook touch different files, and each
    // round trip saved shows on every repeated up.
    const [, onDeleteHook] = await Promise.all([
      configureIdle(ssh, bootstrap.idle),
      // Adopting a VM without --on-delete keeps its hook, which this directory then knows of too.
      bootstrap.onDelete === undefined ? hasHook(ssh) : storeHook(ssh, bootstrap.onDelete).then(() => bootstrap.onDelete !== null),
    ])
    // The hook's timeout is kept here too, as the user's bound: the VM's copy of it can only shorten it.
    const timeout = bootstrap.onDelete === undefined ? {} : {hook_timeout_s: bootstrap.onDelete?.timeout_s ?? null}
    const record = ctx.state.updateVm(org, claim.name, {on_delete_hook: onDeleteHook, ...timeout})
    // The limits travel with the VM, for a guard on another machine: a VM that cannot carry them is not ready.
    if (record) await writeVmLimits(ssh, limitsFile(record, ctx.request.owner?.name ?? null, clock.now()))
    if (!bootstrap.shim) ctx.state.updateVm(org, claim.name, {bootstrapped: true})
    return {...from, endpoint, hostKey, kind: 'bootstrapped', marker, shimOutput: shim ?? null, ssh, watch}
  } catch (error) {
    ssh.close()
    throw error
  }
}

export async function startShim(
  ctx: Provisioning,
  bootstrapped: Bootstrapped,
  bootstrap: NonNullable<Provisioning['request']['bootstrap']>,
  onEvent: (event: StepEvent) => void,
): Promise<Ready> {
  const {dstackManaged, version} = await watched(ctx, bootstrapped.watch, (signal) =>
    runShim(bootstrapped.ssh, bootstrap.params, onEvent, signal, bootstrapped.shimOutput ?? undefined, ctx.clock),
  )
  ctx.state.updateVm(ctx.request.org, bootstrapped.claim.name, {bootstrapped: true})
  return {...bootstrapped, dstackManaged, kind: 'ready', shimVersion: version}
}

/**
 * Runs a bootstrap phase against the VM's state watch, if it has one: the VM failing aborts the phase, and a phase
 * that fails while the VM failed reports the VM's error (exit 5), not its own. Either way wait-running, which runs
 * alongside, ends with the same error.
 */
async function watched<T>(ctx: Provisioning, watch: StateWatch | null, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  if (!watch) return work(ctx.signal)
  try {
    return await work(AbortSignal.any([ctx.signal, watch.signal]))
  } catch (error) {
    const reported = (await watch.failed(!ctx.signal.aborted)) ?? error
    watch.abandon(reported)
    throw reported
  }
}
