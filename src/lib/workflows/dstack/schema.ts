/** The JSON contract of targon dstack sync. */
import * as z from 'zod'

const HostSchema = z.object({
  hostname: z.string().describe('the name dstack reaches the VM by: its IP, or dstack-host-pattern'),
  port: z.number(),
  uid: z.string().nullable().describe("the VM's uid; null: a host of the dstack fleet that is no VM of the fleet any more"),
  name: z.string().nullable(),
})

export const DstackSyncResultSchema = z.object({
  fleet: z.string().describe('the targon fleet'),
  dstack_fleet: z.string().describe('the dstack SSH fleet that holds its VMs: targon-<fleet>'),
  project: z.string().describe('the dstack project'),
  action: z.enum(['created', 'updated', 'unchanged']).describe('what the sync did to the dstack fleet'),
  added: z.array(HostSchema).describe('hosts put into the fleet (a host whose port changed is removed, then added)'),
  removed: z.array(HostSchema).describe('hosts taken out of the fleet'),
  unchanged: z.array(HostSchema),
  busy: z.array(HostSchema).describe('hosts that should go but run a dstack job: left in the fleet until it ends'),
  requests: z.number().describe('HTTP requests sent to dstack'),
  retries: z.number().describe('requests sent again because dstack was processing the fleet, or plans made again'),
})
export type DstackSyncResult = z.infer<typeof DstackSyncResultSchema>

/** One dstack fleet's sync as the guard's sweep ran it: counts of hosts, or why it failed. */
export const DstackSyncSummarySchema = z.object({
  fleet: z.string().describe('the targon fleet'),
  dstack_fleet: z.string().describe('targon-<fleet>'),
  action: z
    .enum(['created', 'updated', 'unchanged', 'failed'])
    .describe('what the sync did to the dstack fleet; failed: nothing known (error says why), the next sweep tries again'),
  added: z.number().describe('hosts put into the fleet'),
  removed: z.number().describe('hosts taken out of it'),
  unchanged: z.number(),
  busy: z.number().describe('hosts that should go but run a dstack job: left until it ends'),
  requests: z.number().describe('HTTP requests sent to dstack for this fleet'),
  retries: z.number(),
  error: z.string().nullable().describe('why the sync failed; null when it did not'),
})
export type DstackSyncSummary = z.infer<typeof DstackSyncSummarySchema>

export const SweepDstackSyncSchema = z.object({
  fleets: z.array(DstackSyncSummarySchema).describe('each targon-* dstack fleet of the fleets the sweep covers'),
  error: z
    .string()
    .nullable()
    .describe("why dstack's fleets could not be listed (then fleets is empty and nothing was synced); null when they were"),
})
export type SweepDstackSync = z.infer<typeof SweepDstackSyncSchema>
