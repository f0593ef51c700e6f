/**
 * One SSH connection per VM for the reads of a run (the limits it carries, its idle probe, its jobs), opened on first
 * use: every read after the first costs a channel, not a handshake, and the sshd of a VM sees one connection per run.
 * Each VM's reads follow one another on it, and it is released as soon as they are done: a connection left open
 * without a command looks like a user's tunnel to the VM's idle sampler. A connection that failed stays failed for
 * the run, so no later read waits for it.
 */
import type {Clock} from '../../core/clock.js'
import type {SshSession} from '../../adapters/ssh/session.js'
import {type VmReach, openVm} from './fan-out.js'
import type {KnownVm} from './fleet-read.js'

export class VmSessions {
  private readonly opened = new Map<string, Promise<SshSession>>()

  constructor(private readonly options: VmReach & {clock: Clock; signal?: AbortSignal}) {}

  /** The run's session to the VM; `deadlineMs` bounds the first attempt's retries (0: one attempt). */
  session(vm: KnownVm, deadlineMs?: number): Promise<SshSession> {
    let session = this.opened.get(vm.uid)
    if (!session) {
      session = openVm(vm, {...this.options, deadlineMs}).then((opened) => opened.session)
      // Whoever asks later sees the failure; none is left unhandled meanwhile.
      session.catch(() => undefined)
      this.opened.set(vm.uid, session)
    }
    return session
  }

  /** Closes the VM's connection once its reads are done (a later one of the run opens another). */
  release(vm: KnownVm): void {
    const session = this.opened.get(vm.uid)
    this.opened.delete(vm.uid)
    void session?.then((each) => each.close()).catch(() => undefined)
  }

  /** Closes every connection of the run. */
  async closeAll(): Promise<void> {
    const sessions = await Promise.allSettled(this.opened.values())
    for (const each of sessions) if (each.status === 'fulfilled') each.value.close()
    this.opened.clear()
  }
}
