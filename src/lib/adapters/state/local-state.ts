/**
 * Local state: one small 0600 JSON file per VM (its password, TTL, host-key pin), so that
 * concurrent runs working on different VMs never lose each other's updates. Local state only adds to what the
 * API says; a missing or corrupt file never blocks `down`.
 */
import {randomBytes} from 'node:crypto'
import {mkdirSync, readdirSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import * as z from 'zod'

import {TargonError, localWriteError} from '../../core/errors.js'
import {ensureConfigDir} from './trust.js'
import {childPath, idOfChild} from './paths.js'
import {assertConfigDir, readOwnFile} from './trust.js'

export const HostKeyPinSchema = z.object({
  alias: z.string(),
  key: z.string().describe('"<type> <base64>" as in known_hosts'),
  fingerprint: z.string(),
  host: z.string(),
  port: z.number(),
})
export type HostKeyPin = z.infer<typeof HostKeyPinSchema>

export const VmRecordSchema = z.object({
  name: z.string(),
  org: z.string(),
  fleet: z.string(),
  uid: z.string().nullable(),
  resource: z.string().nullable(),
  max_price: z.number().nullable(),
  password: z.string(),
  created_at: z.string(),
  ttl_expires_at: z.string().nullable(),
  /** up --max-cost: the VM's budget in USD, enforced by down --expired against price × age. */
  max_cost_usd: z.number().nullable().default(null),
  /** up --idle: seconds idle after which down --idle deletes it (also kept on the VM, next to its idle clock). */
  idle_limit_s: z.number().nullable().default(null),
  /** targon extend: until then no idleness deletes it (down --idle, sweep); its TTL and budget still apply. */
  idle_hold_until: z.string().nullable().default(null),
  host_key: HostKeyPinSchema.nullable().default(null),
  bootstrapped: z.boolean().default(false),
  /**
   * up stored a pre-delete hook on the VM (up --on-delete): down and sweep run it there before deleting the VM. Other
   * VMs are not contacted before their deletion, so that an unreachable VM without a hook costs no wait.
   */
  on_delete_hook: z.boolean().default(false),
  /**
   * up --hook-timeout of that hook, in seconds: the user's bound on it, which the VM's own copy can only shorten
   * (hooks/hook.ts); null when unknown here (an older record, or a hook adopted from elsewhere).
   */
  hook_timeout_s: z.number().int().positive().nullable().default(null),
  /** run --detach --down started this job from here: the sweep reads the VM's jobs, and deletes it once the job has ended. */
  down_job: z.string().nullable().default(null),
})
export type VmRecord = z.infer<typeof VmRecordSchema>

/**
 * What this machine learned from a DELETE of a workload: `accepted` (Targon answered 2xx, so any `error`
 * record that follows is a tombstone) or `refused` (HTTP 500: a registered, suspended or crashed workload
 * that is still there). Notes outlive the VM record, so that later runs, cron ones included, know.
 */
export const DeleteNoteSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  outcome: z.enum(['accepted', 'refused']),
  at: z.string(),
})
export type DeleteNote = z.infer<typeof DeleteNoteSchema>

/**
 * What the server's history said of an `error` record this machine has no delete note for (see deletion/history.ts):
 * `deleted` (final while the record stays a tombstone: billing ended at `deleted_at`), `crashed` or `unknown` (asked
 * again after an hour). `last_listed_at`: when a listing last showed the record (at most a day off), from which the
 * verdict is kept 30 days once the record left the listing; absent in files of older versions (asked_at stands in).
 */
export const HistoryVerdictSchema = z.object({
  uid: z.string(),
  verdict: z.enum(['deleted', 'crashed', 'unknown']),
  deleted_at: z.string().nullable(),
  asked_at: z.string(),
  last_listed_at: z.string().optional(),
})
export type HistoryVerdict = z.infer<typeof HistoryVerdictSchema>

/** What this directory keeps of an org: the uids of its keys registered there (the project key's, the team guard's). */
const OrgCacheSchema = z.object({ssh_key_uid: z.string().optional(), guard_key_uid: z.string().optional()})
export type OrgCache = z.infer<typeof OrgCacheSchema>

/** Notes are kept this long after their workload left the listing, for a typed uid to stay "already gone". */
const NOTE_RETENTION_MS = 30 * 86_400_000

export interface LoadedRecords {
  records: VmRecord[]
  /** Files that could not be read, as warnings. */
  problems: string[]
}

export class LocalState {
  /** Records in a config directory that others own or can write could be planted: refused before any is read. */
  constructor(readonly dir: string) {
    assertConfigDir(dir)
  }

  private vmDir(org: string): string {
    return childPath(join(this.dir, 'vms'), org)
  }

  private vmFile(org: string, name: string): string {
    return childPath(this.vmDir(org), name, '.json')
  }

  /** Writes (or replaces) a VM record atomically with mode 0600. */
  saveVm(record: VmRecord): void {
    ensureConfigDir(this.dir)
    mkdirSync(this.vmDir(record.org), {mode: 0o700, recursive: true})
    writePrivateJson(this.vmFile(record.org, record.name), VmRecordSchema.parse(record))
  }

  updateVm(org: string, name: string, change: Partial<VmRecord>): VmRecord | undefined {
    const current = this.readVm(org, name)
    if (!current) return undefined
    const next = {...current, ...change}
    this.saveVm(next)
    return next
  }

  readVm(org: string, name: string): VmRecord | undefined {
    try {
      return VmRecordSchema.parse(JSON.parse(readOwnFile(this.vmFile(org, name))))
    } catch {
      return undefined
    }
  }

  removeVm(org: string, name: string): void {
    rmSync(this.vmFile(org, name), {force: true})
  }

  /** Every readable record of an org; unreadable files are reported, not fatal. */
  listVms(org: string): LoadedRecords {
    return readRecords([this.vmDir(org)])
  }

  /** The VM records of every org in this directory. */
  listAllVms(): LoadedRecords {
    const root = join(this.dir, 'vms')
    return readRecords(subfolders(root).map((folder) => join(root, folder)))
  }

  private noteFile(org: string, uid: string): string {
    return childPath(this.noteDir(org), uid, '.json')
  }

  private noteDir(org: string): string {
    return childPath(join(this.dir, 'deletes'), org)
  }

  writeDeleteNote(org: string, note: DeleteNote): void {
    const path = this.noteFile(org, note.uid)
    ensureConfigDir(this.dir)
    mkdirSync(dirname(path), {mode: 0o700, recursive: true})
    writePrivateJson(path, DeleteNoteSchema.parse(note))
  }

  readDeleteNote(org: string, uid: string): DeleteNote | undefined {
    try {
      return DeleteNoteSchema.parse(JSON.parse(readOwnFile(this.noteFile(org, uid))))
    } catch {
      return undefined
    }
  }

  /** Every readable delete note of an org, by uid. */
  deleteNotes(org: string): Map<string, DeleteNote> {
    const notes = new Map<string, DeleteNote>()
    for (const file of jsonFiles(this.noteDir(org))) {
      const note = this.readDeleteNote(org, idOfChild(file, '.json'))
      if (note) notes.set(note.uid, note)
    }

    return notes
  }

  /** Drops notes whose workload the listing no longer shows and that are older than the retention. */
  pruneDeleteNotes(org: string, listed: Set<string>, now: number): void {
    for (const note of this.deleteNotes(org).values()) {
      if (!listed.has(note.uid) && now - Date.parse(note.at) > NOTE_RETENTION_MS) rmSync(this.noteFile(org, note.uid), {force: true})
    }
  }

  private historyDir(org: string): string {
    return childPath(join(this.dir, 'history'), org)
  }

  /** The history verdict kept for a uid, if any; an unreadable file is as good as none (it is asked again). */
  readHistoryVerdict(org: string, uid: string): HistoryVerdict | undefined {
    try {
      const verdict = HistoryVerdictSchema.parse(JSON.parse(readOwnFile(childPath(this.historyDir(org), uid, '.json'))))
      return verdict.uid === uid ? verdict : undefined
    } catch {
      return undefined
    }
  }

  /** One file per uid, written atomically: concurrent runs never lose each other's verdicts. */
  writeHistoryVerdict(org: string, verdict: HistoryVerdict): void {
    const path = childPath(this.historyDir(org), verdict.uid, '.json')
    ensureConfigDir(this.dir)
    mkdirSync(dirname(path), {mode: 0o700, recursive: true})
    writePrivateJson(path, HistoryVerdictSchema.parse(verdict))
  }

  /**
   * Drops verdicts whose workload left the listing more than the retention ago (by last_listed_at, else asked_at);
   * the listed ones are kept.
   */
  pruneHistoryVerdicts(org: string, listed: Set<string>, now: number): void {
    for (const file of jsonFiles(this.historyDir(org))) {
      const verdict = this.readHistoryVerdict(org, idOfChild(file, '.json'))
      const lastListed = Date.parse(verdict?.last_listed_at ?? verdict?.asked_at ?? '')
      if (verdict && !listed.has(verdict.uid) && !(now - lastListed <= NOTE_RETENTION_MS)) this.dropHistoryVerdict(org, verdict.uid)
    }
  }

  /**
   * Drops the verdicts of these uids, if kept: a record listed in a live status (running, say) is no longer the one
   * the verdict was about, and a later `error` of it must be asked about anew. One directory read, whatever the count.
   */
  dropHistoryVerdicts(org: string, uids: readonly string[]): void {
    if (uids.length === 0) return
    const kept = new Set(jsonFiles(this.historyDir(org)).map((file) => idOfChild(file, '.json')))
    for (const uid of uids) if (kept.has(uid)) this.dropHistoryVerdict(org, uid)
  }

  private dropHistoryVerdict(org: string, uid: string): void {
    rmSync(childPath(this.historyDir(org), uid, '.json'), {force: true})
  }

  orgFile(org: string): string {
    return childPath(join(this.dir, 'orgs'), org, '.json')
  }

  readOrgCache(org: string): OrgCache {
    try {
      return OrgCacheSchema.parse(JSON.parse(readOwnFile(this.orgFile(org))))
    } catch {
      return {}
    }
  }

  writeOrgCache(org: string, cache: OrgCache): void {
    ensureConfigDir(this.dir)
    mkdirSync(join(this.dir, 'orgs'), {mode: 0o700, recursive: true})
    writePrivateJson(this.orgFile(org), cache)
  }
}

/** The .json files of a directory; none when it does not exist. */
function readRecords(dirs: string[]): LoadedRecords {
  const result: LoadedRecords = {problems: [], records: []}
  for (const dir of dirs)
    for (const file of jsonFiles(dir)) {
      const path = join(dir, file)
      try {
        result.records.push(VmRecordSchema.parse(JSON.parse(readOwnFile(path))))
      } catch (error) {
        result.problems.push(`ignoring unreadable local record ${path}${error instanceof TargonError ? ` (${error.message})` : ''}`)
      }
    }

  return result
}

function subfolders(dir: string): string[] {
  try {
    return readdirSync(dir, {withFileTypes: true})
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
  } catch {
    return []
  }
}

function jsonFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((file) => file.endsWith('.json'))
  } catch {
    return []
  }
}

export function writePrivateJson(path: string, value: unknown): void {
  writeAtomically(path, `${JSON.stringify(value, null, 2)}\n`)
}

/** Atomic write: a 0600 temp file, created exclusively (never through a planted link), renamed over the target. */
export function writeAtomically(path: string, text: string): void {
  const temp = `${path}.${randomBytes(4).toString('hex')}.tmp`
  try {
    writeFileSync(temp, text, {flag: 'wx', mode: 0o600})
    renameSync(temp, path)
  } catch (error) {
    rmSync(temp, {force: true})
    throw localWriteError(error, path)
  }
}
