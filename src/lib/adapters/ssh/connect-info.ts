/**
 * How to reach a VM with the system OpenSSH client: address from the API, the project key,
 * and the VM's own pinned known_hosts file (pinned on first contact if another machine
 * created the VM).
 */
import {readFileSync} from 'node:fs'

import {TargonError, usageError} from '../../core/errors.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {WORKLOAD_NAME_PATTERN} from '../targon/schemas.js'
import {type KeyRole, checkedPrivateKeyPath} from './project-key.js'
import {LocalState} from '../state/local-state.js'
import {checkPinDir, hostKeyAlias, pinFile, pinHostKey, readPin, writePin} from './pins.js'
import {SshSession, fingerprintOf} from './session.js'

export interface SshTarget {
  uid: string
  name: string | null
  host: string
  port: number
  identityFile: string
  /** Whose key identityFile is: this directory's project key, or the team guard's. */
  keyRole?: KeyRole
  configDir: string
  /** The VM's local record, if this directory has one: it keeps the pinned key, so a lost pin file is restored from it. */
  record?: {org: string; name: string; key?: string}
}

/** The VM's host key as pinned: its fingerprint, and whether this run pinned it on first contact. */
export interface PinnedKey {
  fingerprint: string
  new: boolean
}

/** An ssh_config Host line: the name when it keeps Targon's rule, else the uid. */
export function hostAlias(vm: {name: string | null; uid: string}): string {
  return vm.name !== null && WORKLOAD_NAME_PATTERN.test(vm.name) ? vm.name : vm.uid
}

/** What every SSH use of a config directory needs, checked before any VM is touched: a private key and pins only the user controls. */
export function checkSshFiles(configDir: string): void {
  checkedPrivateKeyPath(configDir)
  checkPinDir(configDir)
}

/** The VM's pin file, recording the host key on first contact (trust on first use). */
export async function ensurePin(
  target: SshTarget,
  say: (message: string) => void,
  /** How long a VM whose sshd does not answer is tried again, on first contact. */
  connectMs: number,
): Promise<{file: string; alias: string; hostKey: PinnedKey}> {
  const file = pinFile(target.configDir, target.uid)
  const alias = hostKeyAlias(target.uid)
  const pinned = knownKey(target, say)
  if (pinned) return {alias, file, hostKey: {fingerprint: fingerprintOf(pinned), new: false}}
  let hostKey: PinnedKey | undefined
  const session = await openPinned(target, say, {deadlineMs: connectMs, onPinned: (pin) => (hostKey = pin)})
  session.close()
  return {alias, file, hostKey: hostKey ?? {fingerprint: session.hostKey.fingerprint, new: false}}
}

/** The pinned key; a missing pin file is written again from the VM's record, which holds the key pinned at up. */
function knownKey(target: SshTarget, say: (message: string) => void): string | undefined {
  const pinned = readPin(target.configDir, target.uid)
  const recorded = target.record?.key
  if (pinned || !recorded || !/^[\w@.-]+ [A-Za-z0-9+/]+={0,2}$/.test(recorded)) return pinned
  writePin(target.configDir, target.uid, target.host, target.port, recorded)
  say(`Restored the host-key pin of ${target.name ?? target.uid} from its local record`)
  return recorded
}

/**
 * One SSH session to the VM with its pinned host key; on first contact the key is trusted and pinned. A changed
 * key refuses to connect (HOST_KEY_MISMATCH).
 */
export async function openPinned(
  target: SshTarget,
  say: (message: string) => void,
  options: {deadlineMs: number; signal?: AbortSignal; onPinned?: (pin: PinnedKey) => void; clock?: Clock},
): Promise<SshSession> {
  let privateKey: Buffer
  try {
    privateKey = readFileSync(target.identityFile)
  } catch {
    throw new TargonError('CONFIG', `the project key ${target.identityFile} is missing`, {
      hint: 'run targon up once on this machine to create and register it',
    })
  }

  const pinned = knownKey(target, say)
  const session = await SshSession.open({
    clock: options.clock,
    deadline: (options.clock ?? REAL_CLOCK).now() + options.deadlineMs,
    host: target.host,
    pinned,
    keyRole: target.keyRole,
    port: target.port,
    privateKey,
    signal: options.signal,
    username: 'ubuntu',
  })
  if (!pinned) {
    if (target.record) pinHostKey(new LocalState(target.configDir), {...target.record, uid: target.uid}, target, session.hostKey)
    else writePin(target.configDir, target.uid, target.host, target.port, session.hostKey.key)
    say(`Pinned the host key of ${target.name ?? target.uid} on first contact: ${session.hostKey.fingerprint}`)
    options.onPinned?.({fingerprint: session.hostKey.fingerprint, new: true})
  }

  return session
}

/** OpenSSH forwarding options for `targon ssh` (-L, -R, -D, -N), already checked. */
export interface Forwarding {
  local: string[]
  remote: string[]
  dynamic: string[]
  noCommand: boolean
}

const FORWARD_FIELD = /^(\[[0-9a-fA-F:.]+\]|[\w./*-]+)$/

/** A spec's fields: split at colons outside brackets ([::1]:8888:localhost:8888 has four). */
function forwardFields(spec: string): string[] {
  return spec.match(/\[[^\]]*\]|[^:]+/g) ?? []
}

const isPort = (field: string) => /^\d{1,5}$/.test(field) && Number(field) <= 65_535
const isSocket = (field: string) => field.includes('/')

/**
 * Whether a spec has one of the forms OpenSSH takes: -L and -R [bind:]port:host:hostport (or a Unix socket on
 * either side), -R also [bind:]port alone (a SOCKS proxy on the VM), -D [bind:]port.
 */
function isForwardSpec(flag: '-D' | '-L' | '-R', spec: string): boolean {
  const fields = forwardFields(spec)
  if (spec.startsWith('-') || fields.join(':') !== spec || !fields.every((field) => FORWARD_FIELD.test(field))) return false
  const last = fields.at(-1) as string
  if (flag === '-D' || (flag === '-R' && fields.length <= 2 && !fields.some(isSocket)))
    return fields.length <= 2 && isPort(last) && (flag === '-R' || fields.length === 1 || !isSocket(fields[0] as string))
  if (fields.length === 2) return fields.some(isSocket) && fields.every((field) => isSocket(field) || isPort(field))
  if (fields.length !== 3 && fields.length !== 4) return false
  const listen = fields.at(-3) as string
  return (isPort(listen) || (fields.length === 3 && isSocket(listen))) && (isPort(last) || isSocket(last))
}

/** Refuses a forwarding spec that is not one of OpenSSH's forms, or that could pass for another option. */
export function checkForwarding(forwarding: Forwarding): Forwarding {
  const specs: ['-D' | '-L' | '-R', string[]][] = [
    ['-L', forwarding.local],
    ['-R', forwarding.remote],
    ['-D', forwarding.dynamic],
  ]
  for (const [flag, values] of specs) {
    for (const value of values) {
      if (!isForwardSpec(flag, value))
        throw usageError(
          `${flag} "${value}" is not a forwarding spec`,
          `as OpenSSH takes it, e.g. ${flag === '-D' ? '-D 1080' : `${flag} 8888:localhost:8888`}`,
        )
    }
  }

  return forwarding
}

export function forwardingArgs(forwarding: Forwarding): string[] {
  return [
    ...forwarding.local.flatMap((spec) => ['-L', spec]),
    ...forwarding.remote.flatMap((spec) => ['-R', spec]),
    ...forwarding.dynamic.flatMap((spec) => ['-D', spec]),
    ...(forwarding.noCommand ? ['-N'] : []),
  ]
}

/**
 * Options that keep a VM at a reused address from inheriting trust meant for another host: no system-wide known
 * hosts, no agent, no shared connection. On the command line they win over the user's ssh config, which is still
 * read (a mandatory ProxyJump on a jump host keeps working).
 */
const HARDENING = [
  ['GlobalKnownHostsFile', '/dev/null'],
  ['ForwardAgent', 'no'],
  ['ControlMaster', 'no'],
  ['ControlPath', 'none'],
] as const

export function sshArgv(target: SshTarget, command: string[], options: string[] = []): string[] {
  const argv = [
    'ssh',
    '-p',
    String(target.port),
    '-i',
    target.identityFile,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    `UserKnownHostsFile=${pinFile(target.configDir, target.uid)}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `HostKeyAlias=${hostKeyAlias(target.uid)}`,
    ...HARDENING.flatMap(([option, value]) => ['-o', `${option}=${value}`]),
    ...options,
    `ubuntu@${target.host}`,
  ]
  // As OpenSSH itself, and as targon exec: the words are joined with spaces into one line for the remote shell.
  if (command.length > 0) argv.push('--', command.join(' '))
  return argv
}

export function hostConfigEntry(host: {
  name: string | null
  uid: string
  host: string
  port: number
  identity_file: string
  known_hosts_file: string
  host_key_alias: string
}): string {
  return [
    `Host ${hostAlias(host)}`,
    `  HostName ${host.host}`,
    `  Port ${host.port}`,
    '  User ubuntu',
    `  IdentityFile ${host.identity_file}`,
    '  IdentitiesOnly yes',
    `  UserKnownHostsFile ${host.known_hosts_file}`,
    '  StrictHostKeyChecking yes',
    `  HostKeyAlias ${host.host_key_alias}`,
    ...HARDENING.map(([option, value]) => `  ${option} ${value}`),
    '',
  ].join('\n')
}

/**
 * The environment of the ssh child: without targon's own variables and without any variable that carries the API
 * key, since ssh hands its environment on to ProxyCommand, LocalCommand and whatever SendEnv matches.
 */
export function sshEnvironment(env: NodeJS.ProcessEnv, apiKey: string | undefined): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name, value]) => !name.startsWith('TARGON_') && !(apiKey && value !== undefined && value.includes(apiKey)),
    ),
  )
}

/** The environment of the ssh child, made from this process's (see sshEnvironment). */
export function sshChildEnvironment(apiKey: string | undefined): NodeJS.ProcessEnv {
  return sshEnvironment(process.env, apiKey)
}
