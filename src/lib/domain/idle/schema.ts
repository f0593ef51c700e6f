/** What a VM's idle clock and a live sample say, as status and down report it. */
import * as z from 'zod'

export const USAGE_STATES = ['idle', 'busy', 'unreadable'] as const

export const UsageSchema = z.object({
  state: z.enum(USAGE_STATES).describe('unreadable: the idle clock could not be read; such a VM is never deleted for idleness'),
  idle_seconds: z.number().nullable().describe("idle up to the last sample, by the VM's own clock; null when unreadable"),
  idle_limit_seconds: z.number().nullable().describe("the VM's own limit (up --idle), else down --idle-limit; null: none"),
  idle_reason: z.string().describe('why it is idle, busy or unreadable'),
  idle_hold_until: z
    .string()
    .optional()
    .describe('idle past its limit, but its idle deletion is held off on the VM (targon extend) until about then'),
  gpus: z.array(z.object({index: z.number(), util_pct: z.number(), mem_used_mib: z.number(), mem_total_mib: z.number()})).nullable(),
  ssh_sessions: z.number().nullable().describe('SSH sessions with a terminal or a command, targon probes not counted'),
  tunnels: z
    .number()
    .nullable()
    .describe("SSH sessions without a terminal (port-forwards), the dstack server's tunnel to the shim not counted"),
  dstack_tasks: z.array(z.object({id: z.string(), status: z.string()})).nullable(),
  containers: z.array(z.string()).nullable().describe('running containers, when up --idle-containers counts them'),
})
export type Usage = z.infer<typeof UsageSchema>
