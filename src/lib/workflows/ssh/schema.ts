/** The JSON contract of targon ssh, and the pinned host key that exec and cp report too. */
import * as z from 'zod'

export const HostKeySchema = z
  .object({fingerprint: z.string(), new: z.boolean().describe('pinned by this run, on first contact')})
  .describe('the pinned host key')

export const SshResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  host: z.string(),
  port: z.number(),
  user: z.literal('ubuntu'),
  identity_file: z.string(),
  known_hosts_file: z.string(),
  host_key_alias: z.string(),
  host_key: HostKeySchema,
  argv: z.array(z.string()).describe('the OpenSSH command line, ready to exec'),
})
export type SshResult = z.infer<typeof SshResultSchema>

export const SshConfigResultSchema = z.object({
  fleet: z.string(),
  hosts: z.array(SshResultSchema),
  config: z.string().describe('Host entries for ~/.ssh/config or an Include'),
})
