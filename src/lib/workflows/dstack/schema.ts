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
