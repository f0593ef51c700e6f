/**
 * One SSH connection to a VM (ssh2): connect with back-off until sshd answers, verify the
 * host key against the VM's pin (trust on first use), run commands, and reach the VM's
 * loopback through a forwarded channel. Install, shim-start and the health check share it.
 */
import {textDecoder} from '../../core/lines.js'
import {createHash} from 'node:crypto'
import type {Client, ClientChannel, SFTPWrapper} from 'ssh2'

import {TargonError} from '../../core/errors.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {poll} from '../../core/poll.js'

export interface HostKey {
  /** "ssh-ed25519 AAAA…", as in known_hosts. */
  key: string
  /** OpenSSH form: SHA256:… */
  fingerprint: string
}

export interface ConnectOptions {
  host: string
  port: number
  username: string
  privateKey: Buffer
  /** Whose key it is, to say which one a VM refused: the project key unless said. */
  keyRole?: 'guard' | 'project'
  /** The pinned key; undefined means trust on first use. */
  pinned?: string
  /** Epoch ms after which no new attempt starts; read before each attempt, so a getter may move it. */
  deadline: number
  signal?: AbortSignal
  onRetry?: (reason: string) => void
  /** The longest wait between attempts (1 s at first, then 1.5 times longer each time); default 15 s. */
  maxRetryDelayMs?: number
  /** The clock of the deadline and of the waits between attempts. */
  clock?: Clock
}

/** What httpGet reads of an answer from a VM's local service (the shim's health check is a few bytes). */
const MAX_HTTP_BYTES = 64 * 1024

/** After an abort, how long a remote command may take to end before the wait for it stops. */
const ABORT_GRACE_MS = 1000

export interface ExecResult {
  code: number | null
  /** The signal that ended the remote command (SIGTERM, …). */
  signal?: string
  /** Aborted by the caller: the command was sent TERM and its channel closed. */
  aborted?: boolean
  /** It printed more than the caller's maxBytes: the command was sent TERM and its channel closed. */
  overflowed?: boolean
  /**
   * What the command printed: all of it under maxBytes; without one, only the last KEPT_OUTPUT_CHARS or so of each
   * stream (onStdout/onStderr see it all).
   */
  stdout: string
  stderr: string
}

/**
 * How much of each stream exec keeps for its result when the caller sets no maxBytes. A VM is untrusted and may print
 * without end: callers that want everything stream it (onStdout), the result keeps the end, which is what error
 * messages quote. Small, since many VMs may run at once (exec --parallel 64).
 */
const KEPT_OUTPUT_CHARS = 64 * 1024

/** `kept` + `text`, cut to its last KEPT_OUTPUT_CHARS once it is twice that (so the cut is rare). */
function keepEnd(kept: string, text: string): string {
  const all = kept + text
  return all.length > 2 * KEPT_OUTPUT_CHARS ? all.slice(-KEPT_OUTPUT_CHARS) : all
}

export function fingerprintOf(key: string): string {
  const blob = Buffer.from(key.split(' ')[1] ?? '', 'base64')
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

/** ssh2 hands the raw wire-format key: its type string, then the key itself. */
function hostKeyFromWire(wire: Buffer): HostKey {
  const typeLength = wire.readUInt32BE(0)
  const type = wire.subarray(4, 4 + typeLength).toString('ascii')
  const key = `${type} ${wire.toString('base64')}`
  return {fingerprint: fingerprintOf(key), key}
}

/** Failures that mean "sshd is not up yet": retried until the deadline. */
function isNotYet(error: Error & {code?: string; level?: string}): boolean {
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE'].includes(error.code ?? '') ||
    /handshake|Connection lost before handshake|closed/i.test(error.message)
  )
}

function cannotOpen(options: ConnectOptions, why: string): TargonError {
  return new TargonError('SSH_FAILED', `cannot open SSH to ${options.host}:${options.port}: ${why}`, {
    hint: 'the VM may still be booting: try again in a minute, or run targon up --name <vm> again',
  })
}

export class SshSession {
  /** Set when the connection drops; every later use fails with SSH_FAILED. */
  private lost = false

  private constructor(
    private readonly client: Client,
    readonly hostKey: HostKey,
  ) {
    client.on('close', () => (this.lost = true))
  }

  private lostError(): TargonError {
    return new TargonError('SSH_FAILED', 'the SSH connection to the VM was lost', {
      hint: 'run targon up --name <vm> again; the bootstrap resumes where it stopped',
    })
  }

  /** Connects, retrying with back-off while sshd is not up yet, until the deadline (read before each wait). */
  static async open(options: ConnectOptions): Promise<SshSession> {
    const {default: ssh2} = await import('ssh2')
    let notYet = ''
    const session = await poll(
      async () => {
        const attempt = await SshSession.attempt(new ssh2.Client(), options)
        if (attempt instanceof SshSession) return attempt
        notYet = attempt.notYet
        options.onRetry?.(notYet)
        return undefined
      },
      {
        get deadline() {
          return options.deadline
        },
        clock: options.clock,
        delayMs: (attempt) => Math.min(1000 * 1.5 ** attempt, options.maxRetryDelayMs ?? 15_000),
        signal: options.signal,
      },
    )
    if (session) return session
    throw cannotOpen(options, notYet)
  }

  /** One connection attempt: the session, sshd not answering yet (why), or a failure that no retry mends (thrown). */
  private static async attempt(client: Client, options: ConnectOptions): Promise<SshSession | {notYet: string}> {
    let seen: HostKey | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        client.on('ready', () => resolve())
        // Without TCP_NODELAY a small request sent while an earlier one is unacknowledged waits for the VM's delayed
        // ACK (up to 40 ms on Linux); SFTP and the sync send many such requests in a row.
        client.on('connect', () => client.setNoDelay(true))
        client.on('error', reject)
        client.on('close', () => reject(new Error('connection closed before handshake')))
        client.connect({
          host: options.host,
          hostVerifier: (wire: Buffer) => {
            seen = hostKeyFromWire(wire)
            return options.pinned === undefined || options.pinned === seen.key
          },
          keepaliveCountMax: 3,
          keepaliveInterval: 15_000,
          port: options.port,
          privateKey: options.privateKey,
          readyTimeout: Math.max(5000, Math.min(20_000, options.deadline - (options.clock ?? REAL_CLOCK).now())),
          username: options.username,
        })
      })
      client.removeAllListeners('close')
      client.on('error', () => {})
      return new SshSession(client, seen as HostKey)
    } catch (error) {
      client.removeAllListeners()
      client.on('error', () => {})
      client.end()
      const err = error as Error & {level?: string}
      if (seen && options.pinned !== undefined && seen.key !== options.pinned) {
        throw new TargonError(
          'HOST_KEY_MISMATCH',
          `the host key of ${options.host}:${options.port} changed: pinned ${fingerprintOf(options.pinned)}, offered ${seen.fingerprint}; refusing to connect`,
          {
            hint: 'if the VM was rebuilt on purpose, delete it and create a new one; otherwise someone may be intercepting the connection',
          },
        )
      }

      if (err.level === 'client-authentication') {
        if (options.keyRole === 'guard')
          throw new TargonError('SSH_FAILED', `${options.host}:${options.port} refused the team guard's key`, {
            hint: "it was made before the team guard's key existed, or not by targon up: only its owner's directory reaches it",
          })
        throw new TargonError('SSH_FAILED', `${options.host}:${options.port} refused the project key for user ${options.username}`, {
          hint: 'the VM was created with another key; delete it with targon down and run targon up again',
        })
      }

      if (!isNotYet(err)) throw cannotOpen(options, err.message)
      return {notYet: err.message}
    }
  }

  /**
   * Runs a command; stdin, when given, is written and closed. With `maxBytes`, a command that prints more than that
   * (stdout and stderr together) is ended and its channel closed at once: `overflowed`, and nothing more is read.
   */
  exec(
    command: string,
    options: {
      stdin?: string
      onStdout?: (chunk: string) => void
      onStderr?: (chunk: string) => void
      signal?: AbortSignal
      maxBytes?: number
    } = {},
  ): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      if (this.lost) {
        reject(this.lostError())
        return
      }

      this.client.exec(command, (error, stream) => {
        if (error) {
          reject(
            this.lost
              ? this.lostError()
              : new TargonError('SSH_FAILED', `SSH exec failed: ${error.message}`, {hint: 'run targon up --name <vm> again'}),
          )
          return
        }

        let stdout = ''
        let stderr = ''
        let code: number | null = null
        let signal: string | undefined
        let aborted = false
        let overflowed = false
        let received = 0
        let settled = false
        let grace: NodeJS.Timeout | undefined
        const finish = (outcome: () => void) => {
          if (settled) return
          settled = true
          clearTimeout(grace)
          options.signal?.removeEventListener('abort', onAbort)
          outcome()
        }

        // An abort ends the remote command, not only the wait for it: TERM through the channel (sshd passes it on to
        // the command), then the channel is closed. A command that ignores both is not waited for past the grace;
        // closing the connection then leaves it to the VM.
        const end = () => {
          signalChannel(stream, 'TERM')
          stream.close()
          grace = setTimeout(() => finish(() => resolve({aborted, code, overflowed, signal, stderr, stdout})), ABORT_GRACE_MS)
        }

        const onAbort = () => {
          aborted = true
          end()
        }

        /** Counts a chunk; false once past maxBytes, when the channel is being closed and the chunk is dropped. */
        const within = (chunk: Buffer): boolean => {
          if (overflowed) return false
          received += chunk.length
          if (options.maxBytes === undefined || received <= options.maxBytes) return true
          overflowed = true
          end()
          return false
        }

        // The abort may have come while the channel was opening.
        if (options.signal?.aborted) setImmediate(onAbort)
        else options.signal?.addEventListener('abort', onAbort, {once: true})
        const decodeStdout = textDecoder()
        const decodeStderr = textDecoder()
        stream.on('data', (chunk: Buffer) => {
          if (!within(chunk)) return
          const text = decodeStdout(chunk)
          stdout = options.maxBytes === undefined ? keepEnd(stdout, text) : stdout + text
          options.onStdout?.(text)
        })
        stream.stderr.on('data', (chunk: Buffer) => {
          if (!within(chunk)) return
          const text = decodeStderr(chunk)
          stderr = options.maxBytes === undefined ? keepEnd(stderr, text) : stderr + text
          options.onStderr?.(text)
        })
        stream.on('exit', (exitCode: number | null, exitSignal?: string) => {
          code = exitCode
          signal = exitSignal
        })
        stream.on('close', () => {
          // The close of a dropped connection can arrive just after the stream's: check on the next turn.
          setImmediate(() =>
            finish(() =>
              this.lost && code === null && !aborted && !overflowed
                ? reject(this.lostError())
                : resolve({aborted, code, overflowed, signal, stderr, stdout}),
            ),
          )
        })
        stream.end(options.stdin ?? '')
      })
    })
  }

  /** True once the connection has dropped. */
  get closed(): boolean {
    return this.lost
  }

  /** Calls `listener` once the connection drops (at once if it has); the function returned stops listening. */
  onLost(listener: () => void): () => void {
    if (this.lost) listener()
    else this.client.once('close', listener)
    return () => void this.client.removeListener('close', listener)
  }

  /** An SFTP channel on this connection (the VM's sshd runs the sftp subsystem). */
  sftp(): Promise<SFTPWrapper> {
    return new Promise((resolve, reject) => {
      if (this.lost) {
        reject(this.lostError())
        return
      }

      this.client.sftp((error, sftp) =>
        error
          ? reject(
              new TargonError('SSH_FAILED', `cannot open SFTP on the VM: ${error.message}`, {
                hint: 'check that sshd runs the sftp subsystem',
              }),
            )
          : resolve(sftp),
      )
    })
  }

  /** A channel to host:port on the VM's own loopback (ssh direct-tcpip). */
  forward(port: number): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      this.client.forwardOut('127.0.0.1', 0, '127.0.0.1', port, (error, channel) => (error ? reject(error) : resolve(channel)))
    })
  }

  /** GET over a forwarded channel, with Connection: close; returns status and body. */
  async httpGet(port: number, path: string, timeoutMs = 5000): Promise<{status: number; body: string}> {
    const channel = await this.forward(port)
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = []
      let received = 0
      const timer = setTimeout(() => {
        channel.close()
        reject(new Error('timed out'))
      }, timeoutMs)
      channel.on('data', (chunk: Buffer) => {
        received += chunk.length
        if (received <= MAX_HTTP_BYTES) chunks.push(chunk)
        else {
          channel.close()
          reject(new Error(`answered more than ${MAX_HTTP_BYTES / 1024} KiB`))
        }
      })
      channel.on('error', reject)
      channel.on('close', () => {
        clearTimeout(timer)
        const raw = Buffer.concat(chunks).toString()
        const [head = '', ...rest] = raw.split('\r\n\r\n')
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0)
        const chunked = /transfer-encoding:\s*chunked/i.test(head)
        const body = rest.join('\r\n\r\n')
        resolve({body: chunked ? dechunk(body) : body, status})
      })
      channel.end(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
    })
  }

  close(): void {
    this.client.end()
  }
}

/**
 * Sends a signal request on a session channel. ssh2's own ClientChannel.signal() sends nothing once the channel's
 * input is ended, which exec does at once (a remote command must see EOF on stdin), though the protocol allows the
 * request then: so it goes through the channel's protocol object. sshd passes it to the command's whole process
 * group. test/e2e/remote.test.ts ("Ctrl-C ends a silent remote command") fails if this stops working.
 */
function signalChannel(stream: ClientChannel, signal: 'TERM'): void {
  const channel = stream as unknown as {outgoing?: {id?: number}; _client?: {_protocol?: {signal?: (id: number, name: string) => void}}}
  const id = channel.outgoing?.id
  try {
    if (id !== undefined) channel._client?._protocol?.signal?.(id, signal)
  } catch {
    // The connection is closing: nothing more can be sent.
  }
}

function dechunk(body: string): string {
  let out = ''
  let rest = body
  for (;;) {
    const lineEnd = rest.indexOf('\r\n')
    if (lineEnd < 0) return out
    const size = Number.parseInt(rest.slice(0, lineEnd), 16)
    if (!size) return out
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size)
    rest = rest.slice(lineEnd + 2 + size + 2)
  }
}

/** Single-quotes a value for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}
