/**
 * What targon reads of dstack's answers (dstack 0.21.2, core/models/fleets.py and instances.py): only the fields it
 * uses are checked. A fleet is kept whole (loose), since apply wants the plan's current resource back as it came.
 */
import * as z from 'zod'

/** An entry of ssh_config.hosts: a hostname, or an object with its own parameters. */
export const DstackHostEntrySchema = z.union([
  z.string().max(253),
  z.looseObject({hostname: z.string().max(253), port: z.number().int().nullable().optional()}),
])

export const DstackInstanceSchema = z.looseObject({
  instance_num: z.number().int().min(0),
  hostname: z.string().max(253).nullable(),
  status: z.string().max(40),
  busy_blocks: z.number().int().min(0).optional(),
})
export type DstackInstance = z.infer<typeof DstackInstanceSchema>

export const DstackFleetSchema = z.looseObject({
  id: z.string().max(64),
  name: z.string().max(64),
  status: z.string().max(40),
  spec: z.looseObject({
    configuration: z.looseObject({
      ssh_config: z
        .looseObject({port: z.number().int().nullable().optional(), hosts: z.array(DstackHostEntrySchema).max(10_000)})
        .nullable()
        .optional(),
    }),
  }),
  instances: z.array(DstackInstanceSchema).max(10_000),
})
export type DstackFleet = z.infer<typeof DstackFleetSchema>

export const DstackPlanSchema = z.looseObject({current_resource: DstackFleetSchema.nullable()})
export type DstackPlan = z.infer<typeof DstackPlanSchema>

/** A host as targon compares them: dstack's key (the hostname) and the port it connects to. */
export interface DstackHost {
  hostname: string
  port: number
}

/** The hosts of a fleet's spec, each with its port (its own, else the fleet's, else 22). */
export function specHosts(fleet: DstackFleet): DstackHost[] {
  const ssh = fleet.spec.configuration.ssh_config
  return (ssh?.hosts ?? []).map((host) =>
    typeof host === 'string' ? {hostname: host, port: ssh?.port ?? 22} : {hostname: host.hostname, port: host.port ?? ssh?.port ?? 22},
  )
}

/** An instance that holds its host: not ended, nor on its way out. */
export function isLive(instance: DstackInstance): boolean {
  return instance.status !== 'terminated' && instance.status !== 'terminating'
}

/** An instance with a dstack job on it. */
export function isBusy(instance: DstackInstance): boolean {
  return instance.status === 'busy' || (instance.busy_blocks ?? 0) > 0
}
