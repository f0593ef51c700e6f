/**
 * What a deletion by down or sweep ends: the jobs of targon run still running on the VM, read on it as targon jobs
 * reads them (ids and records checked there), so that the deletion's result can name them. The caller bounds the time;
 * its signal closes the connection, so that nothing is left waiting on a VM that does not answer.
 */
import type {EndedJob} from '../../adapters/events/schema.js'
import {openVm} from '../../domain/fleet/fan-out.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {readJobs} from './jobs.js'

/** What a result keeps of a command line (a VM's untrusted bytes, up to 64 KiB each). */
const COMMAND_CHARS = 200

export async function runningJobs(vm: KnownVm, options: {configDir: string; signal: AbortSignal}): Promise<EndedJob[]> {
  // One attempt: a VM about to be deleted is not waited for, and one whose sshd does not answer has no job to name.
  const {session} = await openVm(vm, {...options, connectMs: 0})
  const close = () => session.close()
  options.signal.addEventListener('abort', close, {once: true})
  try {
    const {jobs} = await readJobs(session)
    return jobs.filter((job) => job.state === 'running').map((job) => ({command: cut(job.record.command), id: job.record.id}))
  } finally {
    options.signal.removeEventListener('abort', close)
    session.close()
  }
}

function cut(command: string): string {
  const chars = [...command]
  return chars.length > COMMAND_CHARS ? `${chars.slice(0, COMMAND_CHARS - 1).join('')}…` : command
}
