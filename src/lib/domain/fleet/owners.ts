/**
 * Owners in a shared org. Workload names stay `tcli-<fleet>-<label>` (32 characters leave no room for an owner, and
 * old names would parse wrongly); instead each owner has a Targon project named `tcli-owner-<owner>`, `up` creates
 * its VMs in it (`project_id`), and a VM's owner is read from the `project_id` that the listing carries, through
 * the org's projects. A VM in no project, or in a project of another name, has no owner (VMs from before owners).
 * The listing's own `project_id` filter is never relied on: a server that ignored it would hand over everyone's VMs.
 */
import {mapBounded} from '../../core/concurrency.js'
import type {SettingsResolver} from '../../adapters/settings/resolve.js'
import {OWNER_PATTERN} from '../../adapters/settings/table.js'
import {TargonError} from '../../core/errors.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import type {Workload} from '../../adapters/targon/schemas.js'
import {apiTrouble, isOutcomeUnknown} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import {reconcile} from '../../core/reconcile.js'

const PROJECT_PREFIX = 'tcli-owner-'

/** Which VMs a command sees: with an owner, that owner's alone, unless --any-owner widens to every owner. */
export interface OwnerScope {
  /** The owner set (config key `owner` or TARGON_OWNER); null when none is. */
  owner: string | null
  anyOwner: boolean
}

/** The scope of a run: the owner set (config key `owner`, TARGON_OWNER), widened by --any-owner. */
export async function ownerScope(settings: SettingsResolver, anyOwner: boolean): Promise<OwnerScope> {
  return {anyOwner, owner: (await settings.get('owner')) ?? null}
}

/** Project uid → owner, for the org's owner projects. */
export type OwnerMap = Map<string, string>

export async function ownerProjects(client: TargonClient, org: string): Promise<OwnerMap> {
  const owners: OwnerMap = new Map()
  for (const project of await client.listProjects(org)) {
    // The owner is a name shown and notified: only one of the shape an owner can have (as config's owner key takes it).
    const owner = project.name?.startsWith(PROJECT_PREFIX) ? project.name.slice(PROJECT_PREFIX.length) : undefined
    if (owner !== undefined && OWNER_PATTERN.test(owner)) owners.set(project.uid, owner)
  }

  return owners
}

/**
 * A VM's owner: the name, null for none (no project, or a project that is not an owner's), undefined when it could
 * not be read. An unknown owner is never taken for none: it is nobody's to delete in bulk.
 */
export type VmOwner = string | null | undefined

/** Full reads of workloads in flight at once, for listing items without project_id. */
const FULL_READS_IN_FLIGHT = 8

/**
 * The owner of each workload, by uid. An item without a project_id field (the summary shape of Targon's SDK leaves
 * it out) is read in full, which has it, when `readMissing` (that costs a request per VM, so only runs that scope by
 * owner ask); otherwise, or when the read fails, its owner is unknown. The projects are listed only when some
 * workload is in one.
 */
export async function ownersOfListed(
  client: TargonClient,
  org: string,
  workloads: Workload[],
  readMissing: boolean,
): Promise<Map<string, VmOwner>> {
  const projectIds = new Map<string, string | null | undefined>()
  for (const workload of workloads) projectIds.set(workload.uid, workload.project_id)
  const unread = workloads.filter((workload) => workload.project_id === undefined).map((workload) => workload.uid)
  if (readMissing)
    await mapBounded(unread, FULL_READS_IN_FLIGHT, async (uid) => {
      const full = await client.getWorkload(org, uid).catch(() => undefined)
      projectIds.set(uid, full ? (full.project_id ?? null) : undefined)
    })
  const owners = [...projectIds.values()].some(Boolean) ? await ownerProjects(client, org) : new Map<string, string>()
  return new Map(
    [...projectIds].map(([uid, projectId]): [string, VmOwner] => [
      uid,
      projectId === undefined ? undefined : projectId === null ? null : (owners.get(projectId) ?? null),
    ]),
  )
}

/**
 * The uid of the owner's project, created on first use. An unclear answer to the create is reconciled: the projects
 * are listed again (for the reconcile window) before the create is sent again.
 */
export async function ensureOwnerProject(client: TargonClient, org: string, owner: string, reconcileMs: number): Promise<string> {
  const name = `${PROJECT_PREFIX}${owner}`
  const outcome = await reconcile(
    {
      classify: (error) => (isOutcomeUnknown(error) ? 'unclear' : 'fatal'),
      look: async () => {
        const uid = (await client.listProjects(org)).find((project) => project.name === name)?.uid
        return uid ? {observed: uid} : 'watch'
      },
      lookDelay: BACKOFF.projectLook,
      lookTrouble: apiTrouble,
      send: async () => (await client.createProject(org, name)).uid,
      watchMs: () => reconcileMs,
    },
    {lookFirst: true},
  )
  if (outcome.kind === 'answered') return outcome.value
  if (outcome.kind === 'observed') return outcome.state
  throw outcome.error
}

/** The VMs a scope sees, and how many of the rest it leaves out, by owner (null: none; undefined: unknown). */
export function scoped<T extends {owner: VmOwner}>(vms: T[], scope: OwnerScope): {inScope: T[]; outside: Map<VmOwner, number>} {
  const outside = new Map<VmOwner, number>()
  const inScope: T[] = []
  for (const vm of vms) {
    if (scope.anyOwner || scope.owner === null || vm.owner === scope.owner) inScope.push(vm)
    else outside.set(vm.owner, (outside.get(vm.owner) ?? 0) + 1)
  }

  return {inScope, outside}
}

/**
 * What a name a user typed means under a scope: with an owner set, the owner's VMs first, then VMs without an owner;
 * another owner's VM, or one whose owner is unknown, only by its exact uid. Without an owner, or with --any-owner,
 * every VM.
 */
export function findForOwner<T extends {owner: VmOwner; uid: string}>(
  vms: T[],
  scope: OwnerScope,
  target: string,
  find: (among: T[]) => T[],
): T[] {
  if (scope.owner === null || scope.anyOwner) return find(vms)
  for (const among of [vms.filter((vm) => vm.owner === scope.owner), vms.filter((vm) => vm.owner === null)]) {
    const found = find(among)
    if (found.length > 0) return found
  }

  return vms.filter((vm) => vm.uid === target)
}

/**
 * The warning for VMs of this tool known to bill that a scope leaves out, if any, and for records of unknown billing
 * it leaves out (counted alone: deleted elsewhere, or crashed). Deleted VMs are never counted.
 */
export function outsideWarning(outside: Map<VmOwner, number>, scope: OwnerScope, unknown = 0): string | undefined {
  if (outside.size === 0 && unknown === 0) return undefined
  const total = [...outside.values()].reduce((sum, count) => sum + count, 0)
  const parts = [
    ...(total > 0 ? [`${total} more VM(s) of this tool bill in the org outside owner ${scope.owner}: ${ownerCounts(outside)}`] : []),
    ...(unknown > 0 ? [`${unknown} record(s) of this tool of unknown billing are outside owner ${scope.owner}`] : []),
  ]
  return `${parts.join('; ')}; --any-owner shows them`
}

/** "2 of bob, 1 without an owner, 1 whose owner could not be read" */
export function ownerCounts(counts: Map<VmOwner, number>): string {
  const rank = (owner: VmOwner) => (typeof owner === 'string' ? 0 : owner === null ? 1 : 2)
  return [...counts]
    .sort(([a], [b]) => rank(a) - rank(b) || String(a).localeCompare(String(b)))
    .map(
      ([owner, count]) =>
        `${count} ${typeof owner === 'string' ? `of ${owner}` : owner === null ? 'without an owner' : 'whose owner could not be read'}`,
    )
    .join(', ')
}

/**
 * With no owner set, a bulk deletion that would reach VMs of more than one owner (no owner counting as one), or a
 * VM whose owner could not be read, is refused: in a shared org it would delete a colleague's VMs. --any-owner
 * deletes them all, as asked.
 */
export function refuseMixedOwners(vms: {owner: VmOwner; uncertain?: boolean}[], scope: OwnerScope): void {
  if (scope.owner !== null || scope.anyOwner) return
  const counts = new Map<VmOwner, number>()
  for (const vm of vms) counts.set(vm.owner, (counts.get(vm.owner) ?? 0) + 1)
  if (counts.size <= 1 && !counts.has(undefined)) return
  const uncertain = vms.filter((vm) => vm.uncertain).length
  const note = uncertain > 0 ? ` (${uncertain} of them of unknown billing: deleted elsewhere, or crashed)` : ''
  throw new TargonError('USAGE', `the selection holds VMs of more than one owner: ${ownerCounts(counts)}${note}`, {
    hint: 'set your owner (targon config set owner NAME, or TARGON_OWNER) to delete your own, or pass --any-owner to delete them all',
  })
}
