/**
 * The JSON contract: every command's `data` schema, and the envelopes around them. These
 * schemas are snapshotted as JSON Schema under schemas/ (npm run schemas); a test fails on
 * any unintended change, and the end-to-end tests validate real output against them.
 */
import * as z from 'zod'

import {OffersResultSchema} from '../commands/offers.js'
import {SshConfigResultSchema, SshResultSchema} from '../commands/ssh.js'
import {StatusResultSchema} from '../commands/status.js'
import {ConfigResultSchema} from './settings/config-file.js'
import {DownResultSchema} from './down/down.js'
import {UpResultSchema} from './up/up.js'

export const DATA_SCHEMAS = {
  'config get': ConfigResultSchema,
  'config list': ConfigResultSchema,
  'config set': ConfigResultSchema,
  'config unset': ConfigResultSchema,
  down: DownResultSchema,
  offers: OffersResultSchema,
  ssh: z.union([SshResultSchema, SshConfigResultSchema]),
  status: StatusResultSchema,
  up: UpResultSchema,
} as const

export type CommandId = keyof typeof DATA_SCHEMAS

export const ErrorEnvelopeSchema = z.object({
  schema_version: z.literal(1),
  ok: z.literal(false),
  command: z.string(),
  error: z.object({
    code: z.string().describe('machine code, e.g. PRICE_CAP_EXCEEDED'),
    exit_code: z.number().describe('as in the README table; INTERRUPTED is 128 + the signal number: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM'),
    message: z.string(),
    hint: z.string().nullable(),
    http_status: z.number().nullable(),
    reason: z.string().nullable().describe("the API's reason code"),
    request_id: z.string().nullable(),
    resource: z.object({uid: z.string().optional(), name: z.string().optional()}).nullable(),
    details: z.record(z.string(), z.unknown()),
  }),
  data: z.record(z.string(), z.unknown()).optional().describe('partial results or the clean-up outcome'),
})

export function successEnvelope<T extends z.ZodType>(command: string, data: T) {
  return z.object({
    schema_version: z.literal(1),
    ok: z.literal(true),
    command: z.literal(command),
    data,
    warnings: z.array(z.string()),
  })
}

/** JSON Schema documents, by file name under schemas/. */
export function jsonSchemas(): Record<string, unknown> {
  const files: Record<string, unknown> = {'error.json': z.toJSONSchema(ErrorEnvelopeSchema)}
  for (const [command, schema] of Object.entries(DATA_SCHEMAS)) {
    files[`${command.replace(' ', '-')}.json`] = z.toJSONSchema(successEnvelope(command, schema))
  }

  return files
}
