/**
 * `targon cp`: copies a file or directory tree to or from one VM, or every VM of a selection, over SFTP on one
 * SSH connection per VM with its pinned host key, at most `parallel` VMs at once. A run succeeds only when every
 * file reached every VM (or came from it); otherwise COPY_FAILED (exit 12) with per-VM results.
 */
import {mkdir} from 'node:fs/promises'
import {posix} from 'node:path'

import type {CopyResult, CopyVmResult} from './schema.js'
import {type VmReach, announced, fanOut, openVm, resultOrFailure} from '../../domain/fleet/fan-out.js'
import {type VmSelection, selectVms} from '../select-vms.js'
import type {KnownVm} from '../../domain/fleet/fleet-read.js'
import {folderName} from '../../domain/fleet/naming.js'
import {TargonError, asTargonError} from '../../core/errors.js'
import {type Clock, stopwatch} from '../../core/clock.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {nameOf, placeRoot, safeJoin, unsafeName} from './paths.js'
import {type Entry, LocalSide, RemoteSide, type Side, describeFsError} from './sides.js'
import type {CopySpec} from './spec.js'
import {type TreeProgress, copyTree} from './tree.js'

import type {FanOutRun} from '../../domain/fleet/run.js'

export const DEFAULT_COPY_PARALLEL = 8

export interface CopyOptions extends VmSelection, VmReach {
  spec: CopySpec
  parallel: number
  signal?: AbortSignal
  info?: (message: string) => void
  /** Called with the VMs once they are known, before any copy starts. */
  onStart?: (vms: KnownVm[]) => void
  onProgress?: (vm: string, progress: TreeProgress) => void
  onResult?: (result: CopyVmResult) => void
}

/** Each VM's copy is announced on the run's events (started, then done or failed). */
export async function runCopy(run: FanOutRun, client: TargonClient, state: LocalState, options: CopyOptions): Promise<CopyResult> {
  const {spec} = options
  if (spec.vm !== null && options.targets.length > 0)
    throw new TargonError('USAGE', `${spec.vm}: name the VM before the colon or with --vms, not both`, {hint: 'use :PATH with --vms'})
  const perVm = spec.vm === null && spec.direction === 'download'
  await checkLocal(spec, perVm)
  const targets = spec.vm === null ? options.targets : [spec.vm]
  const vms = await selectVms(run, client, state, {fleet: options.fleet, org: options.org, owners: options.owners, targets})
  options.onStart?.(vms)
  const results = await fanOut(vms, options.parallel, async (vm) => {
    const result = await announced(
      run.events,
      'transfer',
      vm,
      () => copyOne(vm, options, perVm, run.clock),
      (copied) => ({
        detail: `${copied.files} files, ${copied.bytes} bytes`,
        durationMs: copied.duration_ms,
        error: {code: 'COPY_FAILED', message: copied.error ?? 'failed'},
        ok: copied.ok,
      }),
    )
    options.onResult?.(result)
    return result
  })

  const failed = results.filter((result) => !result.ok)
  const result: CopyResult = {
    destination: spec.direction === 'upload' ? `${spec.vm ?? ''}:${spec.remote}` : spec.local,
    direction: spec.direction,
    fleet: targets.length > 0 ? null : options.fleet,
    org: options.org,
    results,
    source: spec.direction === 'upload' ? spec.local : `${spec.vm ?? ''}:${spec.remote}`,
  }
  const what = failed.map((each) => `${each.vm} (${each.error})`).join(', ')
  return resultOrFailure(result, failed.length, {
    code: 'COPY_FAILED',
    hint: 'see the per-VM results (copied, failed); files under their final names are whole',
    message: results.length === 1 ? `the copy failed on ${what}` : `the copy failed on ${failed.length} of ${results.length} VMs: ${what}`,
    signal: options.signal,
  })
}

/** What can be known before connecting: the local source exists; a local destination's directory exists. */
async function checkLocal(spec: CopySpec, perVm: boolean): Promise<void> {
  const missing = (path: string, hint: string) => new TargonError('NOT_FOUND', `${path}: no such file or directory`, {hint})
  if (spec.direction === 'upload') {
    const source = await statLocal(spec.local)
    if (!source) throw missing(spec.local, 'the local source must exist')
    if (source.kind !== 'dir' && source.kind !== 'file') throw new TargonError('USAGE', `${spec.local}: not a regular file or directory`)
    return
  }

  const destination = await statLocal(spec.local)
  if (spec.intoDirectory && destination?.kind !== 'dir')
    throw new TargonError('NOT_FOUND', `${spec.local}: no such directory`, {
      hint: 'a destination ending in "/" must be an existing directory',
    })
  if (perVm) {
    // Every VM's copy goes to DEST/<vm>/, so that no VM overwrites another's.
    if (destination && destination.kind !== 'dir')
      throw new TargonError('USAGE', `${spec.local}: not a directory`, {
        hint: 'a download from several VMs goes into DEST/<vm>/: name a directory',
      })
    return
  }

  if (!destination && !(await statLocal(posix.dirname(spec.local))))
    throw missing(posix.dirname(spec.local), 'the destination directory must exist')
}

/**
 * A local path named on the command line; null when nothing is there. One that cannot be reached (permission
 * denied, a loop of links) is a copy that cannot happen, as it would be on a VM: COPY_FAILED, not a bug.
 */
async function statLocal(path: string): Promise<Entry | null> {
  return new LocalSide().stat(path).catch((error: unknown) => {
    throw new TargonError('COPY_FAILED', plainMessage(error), {cause: error, hint: 'check the path and its permissions'})
  })
}

async function copyOne(vm: KnownVm, options: CopyOptions, perVm: boolean, clock: Clock): Promise<CopyVmResult> {
  const {spec} = options
  const name = vm.name ?? vm.uid
  const elapsed = stopwatch(clock)
  const result: CopyVmResult = {
    bytes: 0,
    copied: [],
    destination: null,
    direction: spec.direction,
    duration_ms: 0,
    error: null,
    failed: [],
    files: 0,
    host_key: null,
    ok: false,
    planned_files: 0,
    skipped: [],
    source: spec.direction === 'upload' ? spec.local : `${name}:${spec.remote}`,
    uid: vm.uid,
    vm: name,
  }
  try {
    const {hostKey, session} = await openVm(vm, {...options, clock})
    result.host_key = hostKey
    try {
      const local = new LocalSide()
      const remote = new RemoteSide(await session.sftp(), (listener) => session.onLost(listener))
      const remotePath = spec.remote === '' ? '.' : spec.remote
      const [from, to, source]: [Side, Side, string] =
        spec.direction === 'upload' ? [local, remote, spec.local] : [remote, local, remotePath]
      let destination = spec.direction === 'upload' ? remotePath : spec.local
      if (perVm) {
        await mkdir(spec.local, {mode: 0o755, recursive: true})
        // The name comes from the API: a folder only when it is one of this tool's names, else the (checked) uid.
        destination = safeJoin(spec.local, folderName(vm))
        await ensureLocalDir(destination)
      }

      const entry = await from.stat(source)
      if (!entry) throw copyError(`${source}: no such file or directory ${from.where}`)
      if (entry.kind !== 'dir' && entry.kind !== 'file') throw copyError(`${source}: not a regular file or directory ${from.where}`)
      const rootName = await copiedName(from, source)
      const target = placeRoot(
        {kind: entry.kind, name: rootName},
        {intoDirectory: spec.intoDirectory || perVm, kind: (await to.stat(destination))?.kind ?? null, path: destination},
      )
      result.destination = spec.direction === 'upload' ? `${name}:${target}` : target
      const outcome = await copyTree(from, to, source, entry, target, rootName, {
        lost: () => (session.closed ? 'the SSH connection to the VM was lost' : remote.lostReason),
        onProgress: (progress) => options.onProgress?.(name, progress),
        signal: options.signal,
      })
      Object.assign(result, {
        bytes: outcome.bytes,
        copied: outcome.copied,
        failed: outcome.failed,
        files: outcome.copied.length,
        planned_files: outcome.plannedFiles,
        skipped: outcome.skipped,
      })
      if (outcome.stopped) result.error = `${outcome.stopped} after ${outcome.copied.length} of ${outcome.plannedFiles} files`
      else if (outcome.failed[0]) {
        const more = outcome.failed.length - 1
        result.error = `${outcome.failed[0].error}${more > 0 ? ` (and ${more} more not copied)` : ''}`
      }
    } finally {
      session.close()
    }
  } catch (error) {
    const failure = asTargonError(error)
    result.error =
      failure.code === 'COPY_FAILED' || failure.code === 'INTERNAL' ? plainMessage(error) : `${failure.code}: ${failure.message}`
  }

  result.ok = result.error === null
  result.duration_ms = elapsed()
  return result
}

function copyError(message: string): TargonError {
  return new TargonError('COPY_FAILED', message)
}

function plainMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The name the copy gets: the source's last component, or its real name for ".", ".." or a home directory. */
export async function copiedName(from: Side, source: string): Promise<string> {
  const name = nameOf(source)
  if (!['', '.', '..', '/'].includes(name)) return name
  const real = nameOf(await from.realpath(source))
  if (real === '' || real === '/') throw copyError(`${source}: name a directory below / to copy`)
  // The VM answers this one: a name such as ".." would place the copy outside the destination.
  const refused = unsafeName(real)
  if (refused) throw copyError(`${source}: refused ${refused} as its real name ${from.where}`)
  return real
}

/** DEST/<vm> for a download from several VMs: made here, or an existing real directory (never a link). */
async function ensureLocalDir(path: string): Promise<void> {
  const local = new LocalSide()
  await local.mkdir(path, 0o755).catch(async (error: unknown) => {
    const existing = await local.lstat(path)
    if (existing?.kind !== 'dir')
      throw copyError(existing ? `${path}: exists locally and is not a directory` : describeFsError(error, path, 'locally'))
  })
}
