/** The JSON contract of targon logs. */
import * as z from 'zod'

export const LogsResultSchema = z.object({
  uid: z.string(),
  name: z.string().nullable(),
  fleet: z.string().nullable(),
  status: z.string().describe('as the API says when the log was read'),
  type: z.literal('serial').describe("the VM's serial console"),
  tail: z.number().nullable().describe('--tail: at most this many of the last lines; null: the whole log the API keeps'),
  lines: z.array(z.string()).describe('console lines, oldest first, without line ends'),
})
export type LogsResult = z.infer<typeof LogsResultSchema>
