/** What a deletion by down, the sweep, dstack scale or run --down is told: its selection, its limits and its listeners. */
import type {VmReach} from '../../domain/fleet/fan-out.js'
import type {DeleteReason, DeleteResult} from '../../domain/deletion/schema.js'
import type {DeleteTarget, DeletionEvent} from '../../domain/deletion/delete-workloads.js'
import type {FleetView, KnownVm} from '../../domain/fleet/fleet-read.js'
import type {VmSessions} from '../../domain/fleet/vm-sessions.js'
import type {DstackLeave} from '../dstack/leave.js'
import type {RunningJobsReader} from './ended-jobs.js'
import type {DownResult} from './schema.js'
import type {DownSelection} from './selection.js'

/** What was chosen and kept, and which of the chosen were just judged idle on their VM (so run no job of targon run). */
export interface Narrowed {
  chosen: KnownVm[]
  kept: DownResult['kept']
  idleUids?: Set<string>
}

export interface DownOptions extends VmReach {
  selection: DownSelection
  dryRun: boolean
  ignoreMissing: boolean
  /** Deletions in flight at once (at most 8). */
  parallel: number
  /** Deploy registered leftovers briefly, so that Targon deletes them. */
  wakeRegistered: boolean
  /** Asked before a bulk deletion on a terminal; false aborts. */
  confirm: (vms: KnownVm[]) => Promise<boolean>
  /**
   * Asked before VMs named by uid that belong to another owner than the run's (or whose owner could not be read) are
   * deleted without --any-owner: true goes ahead (--yes, or a yes on the terminal that names their owners), false
   * aborts, undefined means nobody can be asked (cron, --events ndjson): refused. Absent where the caller chose the
   * VMs itself (run --down of its job's VM, the sweep's selection).
   */
  confirmOthers?: (vms: KnownVm[]) => Promise<boolean | undefined>
  /** The fleet whose --name labels name VMs (the configured one). */
  labelFleet: string
  /** How long an unclear DELETE is reconciled before it is sent again (the reconcile-window setting). */
  reconcileMs: number
  /** Every uid about to be deleted, before the first DELETE. */
  onTargets?: (targets: DeleteTarget[]) => void
  onResult?: (result: DeleteResult) => void
  /** Each deletion's course (see deleteWorkloads). */
  onEvent?: (event: DeletionEvent) => void
  /**
   * What of this tool still bills in the selection's fleet after the run (see billingOfTool): from the final listing,
   * else (`fromListing` false: it failed) from the first one, less what the run settled.
   */
  onStillBilling?: (uids: string[], fromListing: boolean) => void
  /**
   * The last say over what the selectors chose (targon sweep's policies): what is deleted, and what is kept and why.
   * Without it, --idle decides, else every chosen VM is deleted.
   */
  narrow?: (chosen: KnownVm[], view: FleetView, sessions: VmSessions) => Promise<Narrowed>
  /** Run each VM's pre-delete hook before deleting it (false: --no-hooks). Never under --dry-run. */
  hooks: boolean
  /** Why each VM is deleted, for its hook's TARGON_DELETE_REASON; without it, the selection says. */
  reasonOf?: (vm: KnownVm) => DeleteReason
  /**
   * Keep the records of VMs the listing does not show, which --all and --fleet otherwise remove as stale: a sweep
   * runs unattended and often, and one odd listing must never cost a VM its limits.
   */
  keepUnlistedRecords?: boolean
  /** This run's --hook-timeout in seconds, over the one each VM's record keeps; absent: the recorded one. */
  hookTimeoutS?: number
  /** The longest any hook may run in this run (a sweep's cap, as it holds its lock meanwhile); absent: no cap. */
  hookTimeoutCapS?: number
  /**
   * What ends the hooks, when it is not the run's signal: a deletion that an interrupt must not stop (run --down's)
   * still lets one stop its hook at once, and delete.
   */
  hookStop?: AbortSignal
  /**
   * Reads the jobs of targon run running on a VM about to be deleted, so that its result names what the deletion ends
   * (ended_jobs); absent: not read. Bounded here in time, and never a reason to keep a VM.
   */
  runningJobs?: RunningJobsReader
  /**
   * The dstack server of the run, when one is configured: each VM leaves its targon-* dstack fleet before its deletion
   * (a host with a dstack job is waited for within the hook budget, unless forced). Never a reason to keep a VM.
   */
  dstack?: DstackLeave
}
