/** The JSON contract of targon exec. */
import * as z from 'zod'

import {HostKeySchema} from '../ssh/schema.js'

export const ExecVmResultSchema = z.object({
  name: z.string(),
  uid: z.string(),
  exit_code: z.number().nullable().describe('the remote exit code; null: the command could not run (see error)'),
  duration_ms: z.number(),
  error: z.string().nullable().describe('why the command could not run or was cut short'),
  tail: z.array(z.string()).describe('the last lines of output, stdout and stderr as they came'),
  host_key: HostKeySchema.nullable().describe('the pinned host key; null: no SSH connection was made'),
})
export type ExecVmResult = z.infer<typeof ExecVmResultSchema>

export const ExecResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('null when VMs were named with --vms'),
  command: z.string(),
  results: z.array(ExecVmResultSchema),
})
export type ExecResult = z.infer<typeof ExecResultSchema>
