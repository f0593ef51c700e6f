/** The JSON contract of targon cp. */
import * as z from 'zod'

import {HostKeySchema} from '../ssh/schema.js'

export const COPY_DIRECTIONS = ['upload', 'download'] as const

export const CopyVmResultSchema = z.object({
  vm: z.string().describe('the VM name (its uid when it has none)'),
  uid: z.string(),
  direction: z.enum(COPY_DIRECTIONS),
  source: z.string(),
  destination: z.string().nullable().describe('where the copied file or directory went; null when that was never decided'),
  files: z.number().describe('files copied whole'),
  planned_files: z.number().describe('regular files found in the source'),
  bytes: z.number().describe('bytes of the files copied whole'),
  duration_ms: z.number(),
  ok: z.boolean().describe('true only when every file was copied and nothing was refused'),
  error: z.string().nullable().describe('why this VM failed: SSH, a missing path, or a count of the files that failed'),
  host_key: HostKeySchema.nullable().describe('the pinned host key; null: no SSH connection was made'),
  copied: z.array(z.string()).describe('files copied, as <name>/<path> under the copied root'),
  failed: z
    .array(z.object({path: z.string(), error: z.string()}))
    .describe('files and directories not copied, and listing entries refused (a name with "/", "..")'),
  skipped: z
    .array(z.object({path: z.string(), reason: z.string()}))
    .describe('symbolic links and special files in the tree: never followed nor copied'),
})
export type CopyVmResult = z.infer<typeof CopyVmResultSchema>

export const CopyResultSchema = z.object({
  org: z.string(),
  fleet: z.string().nullable().describe('the fleet of ":PATH" without --vms; null when VMs were named'),
  direction: z.enum(COPY_DIRECTIONS),
  source: z.string(),
  destination: z.string(),
  results: z.array(CopyVmResultSchema),
})
export type CopyResult = z.infer<typeof CopyResultSchema>
