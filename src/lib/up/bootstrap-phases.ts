/**
 * The install and shim-start phases, over one SSH connection per VM: wait for SSH (pinning the
 * host key on first contact), run the bootstrap script, then start dstack-shim and check its
 * health through a tunnel. The script itself lives in bootstrap/.
 */
import {readFileSync} from 'node:fs'

import {type StepEvent, runInstall, runShim} from '../bootstrap/runner.js'
import {withConsoleTail} from '../logs/logs.js'
import {readPin, writePin} from '../ssh/pins.js'
import {SshSession} from '../ssh/session.js'
import type {RunContext} from './run-context.js'
import type {Bootstrapped, Ready, Running} from './stages.js'

/** Of the install bound, how long sshd may take to answer after the VM runs. */
const SSH_WAIT_MS = 10 * 60_000

export async function install(
  ctx: RunContext,
  running: Running,
  bootstrap: NonNullable<RunContext['request']['bootstrap']>,
  onEvent: (event: StepEvent) => void,
): Promise<Bootstrapped> {
  const {claim, endpoint} = running
  const {configDir, org} = ctx.request
  const pinned = readPin(configDir, claim.uid)
  const ssh = await SshSession.open({
    deadline: Math.min(ctx.deadline.at, Date.now() + SSH_WAIT_MS),
    host: endpoint.host,
    onRetry: (reason) => ctx.warn(`waiting for SSH on ${claim.name} (${reason})`),
    pinned,
    port: endpoint.port,
    privateKey: readFileSync(ctx.request.identityFile),
    signal: ctx.signal,
    username: 'ubuntu',
  }).catch(async (error: unknown) => {
    // SSH never came up: the console says why (read without the run's signal, which may have expired).
    throw await withConsoleTail(ctx.cleanupClient, org, claim, error)
  })
  try {
    const {hostKey} = ssh
    if (!pinned) {
      writePin(configDir, claim.uid, endpoint.host, endpoint.port, hostKey.key)
      ctx.state.updateVm(org, claim.name, {
        host_key: {
          alias: `targon-${claim.uid}`,
          fingerprint: hostKey.fingerprint,
          host: endpoint.host,
          key: hostKey.key,
          port: endpoint.port,
        },
      })
    }

    const password = ctx.state.readVm(org, claim.name)?.password
    const {marker, shim} = await runInstall(ssh, {...bootstrap.params, password}, onEvent, ctx.signal, bootstrap.shim)
    if (!bootstrap.shim) ctx.state.updateVm(org, claim.name, {bootstrapped: true})
    return {...running, hostKey, kind: 'bootstrapped', marker, shimRun: shim ?? null, ssh}
  } catch (error) {
    ssh.close()
    throw error
  }
}

export async function startShim(
  ctx: RunContext,
  bootstrapped: Bootstrapped,
  bootstrap: NonNullable<RunContext['request']['bootstrap']>,
  onEvent: (event: StepEvent) => void,
): Promise<Ready> {
  const {version} = await runShim(bootstrapped.ssh, bootstrap.params, onEvent, ctx.signal, bootstrapped.shimRun ?? undefined)
  ctx.state.updateVm(ctx.request.org, bootstrapped.claim.name, {bootstrapped: true})
  return {...bootstrapped, kind: 'ready', shimVersion: version}
}
