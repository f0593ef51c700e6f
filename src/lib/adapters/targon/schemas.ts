/**
 * Response schemas of the Targon v3 API. Parse leniently: unknown keys are stripped,
 * nearly everything is optional, enums are open strings. Requests are built strictly
 * (see requests below), because the server rejects unknown body fields.
 */
import {isIP} from 'node:net'
import * as z from 'zod'

const optionalString = z.string().nullish()
const optionalNumber = z.number().nullish()

/**
 * Identifiers that name local files, SSH options and config lines are checked here, at the boundary, so that no code
 * past it sees them raw (an answer that fails is BAD_RESPONSE). Uids are opaque and their prefixes vary (`wrk-`, and
 * `wrk_1` in the SDK's tests): letters, digits, `-`, `_` and `.`, starting with a letter or digit.
 */
export const UID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/
const uid = z.string().regex(UID_PATTERN, 'is not a safe identifier')
/** Workload names, as Targon itself takes them (docs/concepts/files-and-security.md, "Names from the API"): 1-32 lowercase letters, digits and inner hyphens. */
export const WORKLOAD_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/
/**
 * API strings used as identifiers whose shape Targon does not document (project, key, image and resource names):
 * one plain word, never a path, an option or a line.
 */
export const API_IDENTIFIER_PATTERN = /^[A-Za-z0-9._-]{1,64}$/
/** Org slugs: lowercase letters, digits and hyphens. */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/
/** An SSH address: an IP address or a host name, nothing else (no spaces, options or shell text). */
const host = z.string().refine((value) => isIP(value) !== 0 || HOST_NAME.test(value), 'is not an IP address or host name')

/** Both generations of inventory `spec` names; normalized in offers.ts. */
export const OfferSpecSchema = z.object({
  cpu_millicores: optionalNumber,
  disk_size_mib: optionalNumber,
  gpu_count: optionalNumber,
  gpu_model: optionalString,
  gpu_type: optionalString,
  memory: optionalNumber,
  memory_mib: optionalNumber,
  storage: optionalNumber,
  vcpu: optionalNumber,
})

export const RawOfferSchema = z.object({
  available: z.number().int().nullish(),
  cost_per_hour: z.number(),
  description: optionalString,
  display_name: optionalString,
  gpu: z.boolean().nullish(),
  /** The resource name, sent back in a create: one plain word (an item without one is skipped with a warning). */
  name: z.string().regex(API_IDENTIFIER_PATTERN, 'is not a plain resource name'),
  spec: OfferSpecSchema.nullish(),
  type: optionalString,
})
export type RawOffer = z.infer<typeof RawOfferSchema>

export const OrgSchema = z.object({
  credits: optionalNumber,
  name: optionalString,
  org_type: optionalString,
  role: optionalString,
  slug: z.string().regex(SLUG_PATTERN, 'is not an org slug'),
  uid: optionalString,
})
export type Org = z.infer<typeof OrgSchema>

/**
 * GET credits: `{credits, currency}`, credits in USD as a float (v3). A numeric string is read too; an answer without
 * a number is BAD_RESPONSE, never taken for zero.
 */
export const CreditsSchema = z.object({
  credits: z.union([
    z.number(),
    z
      .string()
      .regex(/^-?\d+(\.\d+)?$/)
      .transform(Number),
  ]),
  currency: optionalString,
})

export const ProjectSchema = z.object({
  name: optionalString,
  uid: z.string().min(1),
})
export type Project = z.infer<typeof ProjectSchema>

export const SshKeySchema = z.object({
  name: optionalString,
  public_key_raw: optionalString,
  uid,
})
export type SshKey = z.infer<typeof SshKeySchema>

export const VmImageSchema = z.object({
  description: optionalString,
  display_name: optionalString,
  name: z.string().min(1),
})
export type VmImage = z.infer<typeof VmImageSchema>

export const WorkloadStateSchema = z.object({
  message: optionalString,
  public_ip: host.nullish(),
  ready_replicas: optionalNumber,
  ssh_port: z.number().int().min(1).max(65_535).nullish(),
  status: optionalString,
  total_replicas: optionalNumber,
  updated_at: optionalString,
})
export type WorkloadState = z.infer<typeof WorkloadStateSchema>

const WorkloadResourceSchema = z.object({
  cpu_millicores: optionalNumber,
  gpu_count: optionalNumber,
  gpu_model: optionalString,
  gpu_type: optionalString,
  name: optionalString,
})

const WorkloadFields = z.object({
  cost_per_hour: optionalNumber,
  created_at: optionalString,
  frozen_cost_per_hour: optionalNumber,
  image: optionalString,
  name: optionalString,
  /** Set by checkName below, never read from the answer (a server's own `name_refused` is dropped). */
  name_refused: z
    .unknown()
    .transform((): true | undefined => undefined)
    .optional(),
  project_id: optionalString,
  resource: WorkloadResourceSchema.nullish(),
  resource_name: optionalString,
  state: WorkloadStateSchema.nullish(),
  /** Some servers put the status at the top level instead of under `state`. */
  status: optionalString,
  type: optionalString,
  uid,
  updated_at: optionalString,
})
/**
 * A name that breaks Targon's own rule (a hostile or buggy server renamed the VM to `evil *\n  ProxyCommand …`,
 * `.ssh` or chat markup) is never a name past this point: `name` is null, `name_refused` says why, and the VM is
 * known by its uid alone. It is dropped, not kept aside, so that no later code can use it by mistake.
 */
function checkName<T extends {name?: string | null; name_refused?: true}>(workload: T): T {
  const {name} = workload
  if (name === undefined || name === null || WORKLOAD_NAME_PATTERN.test(name)) return workload
  return {...workload, name: null, name_refused: true}
}

export const WorkloadSchema = WorkloadFields.transform(checkName)
export type Workload = z.infer<typeof WorkloadSchema>

/** The most keys a VM's read is taken to carry: a longer list is a broken or hostile answer, not a VM's keys. */
const MAX_WORKLOAD_SSH_KEYS = 64

/**
 * The SSH keys of a workload, from its full read (the listing's summaries lack them): objects `{uid, name,
 * public_key_raw}` as Targon answers, or bare uids as the request sends them; only the uids are kept.
 */
export const WorkloadSshKeysSchema = z
  .object({
    ssh_keys: z
      .array(z.union([uid, z.object({uid})]))
      .max(MAX_WORKLOAD_SSH_KEYS)
      .nullish(),
  })
  .transform((workload) => (workload.ssh_keys ?? []).map((key) => (typeof key === 'string' ? key : key.uid)))

/**
 * A listed workload that failed the checks above. It may bill, so it is never dropped: it is reported with what
 * little can be said of it (its uid exactly as sent, when that is a string, and the problem), and nothing local
 * is derived from it.
 */
export interface InvalidWorkload {
  uid: string | null
  problem: string
}

/** One listed item: the checked workload, or why it is not one. */
export function checkListedWorkload(item: unknown): {workload: Workload} | {invalid: InvalidWorkload} {
  const parsed = WorkloadSchema.safeParse(item)
  if (parsed.success) return {workload: parsed.data}
  const raw = item && typeof item === 'object' ? (item as {uid?: unknown}).uid : undefined
  const problem = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'item'} ${issue.message}`).join('; ')
  return {invalid: {problem, uid: typeof raw === 'string' ? raw : null}}
}

/** Deploy and create may answer with a sparse body: `{uid}` or `{}`. */
export const SparseWorkloadSchema = WorkloadFields.partial({uid: true}).transform(checkName)
export type SparseWorkload = z.infer<typeof SparseWorkloadSchema>

export const VersionSchema = z.object({
  buildDate: optionalString,
  gitHash: optionalString,
  name: optionalString,
  version: optionalString,
})
export type Version = z.infer<typeof VersionSchema>

/**
 * One event of a workload's history (GET O/workloads/{uid}/events). Only `new_status` and `created_at` are relied on;
 * `event_type` names are undocumented. Text is bounded here: the history is read for a status, never shown in full.
 * An event without `new_status` (null or absent) changed no status: it is valid, and moves nothing.
 */
export const WorkloadEventSchema = z.object({
  created_at: z.string().max(64),
  event_type: z.string().max(128).nullish(),
  message: z
    .string()
    .nullish()
    .transform((text) => text?.slice(0, 200)),
  new_status: z.string().max(64).nullish(),
})
export type WorkloadEvent = z.infer<typeof WorkloadEventSchema>

/** A page of a cursor-paginated list: `{items, next_cursor}`, or a bare array meaning one complete page. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.union([
    z.array(item).transform((items) => ({items, nextCursor: undefined as string | undefined})),
    z
      .object({items: z.array(item).nullish(), next_cursor: z.string().nullish()})
      .transform((page) => ({items: page.items ?? [], nextCursor: page.next_cursor || undefined})),
  ])
}

/** A list that is not paginated but may still come wrapped in `{items}`. */
export function listSchema<T extends z.ZodType>(item: T) {
  return z.union([z.array(item), z.object({items: z.array(item).nullish()}).transform((list) => list.items ?? [])])
}

export const CreateWorkloadRequestSchema = z.strictObject({
  image: z.string(),
  name: z.string(),
  project_id: z.string().optional(),
  resource_name: z.string(),
  ssh_keys: z.array(z.string()),
  type: z.literal('VM'),
  vm_config: z.strictObject({password: z.string().min(4)}),
})
export type CreateWorkloadRequest = z.infer<typeof CreateWorkloadRequestSchema>

/** Reads `state.status ?? status`, lower-cased; unknown strings stay verbatim. */
export function workloadStatus(workload: Pick<Workload, 'state' | 'status'>): string {
  return (workload.state?.status ?? workload.status ?? 'unknown').toLowerCase()
}

export function workloadResourceName(workload: Pick<Workload, 'resource' | 'resource_name'>): string | undefined {
  return workload.resource_name ?? workload.resource?.name ?? undefined
}

/**
 * The hourly price the server bills a VM: `cost_per_hour`, for the price cap and every estimate. Never
 * `frozen_cost_per_hour`, which is the rate while frozen (a running workload can report 0.01 there).
 */
export function workloadPrice(workload: Pick<Workload, 'cost_per_hour'>): number | undefined {
  return workload.cost_per_hour ?? undefined
}
