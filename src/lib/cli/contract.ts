/**
 * The JSON contract of every command, assembled: each command's `data` schema (defined beside the workflow that
 * produces it), the envelopes around them, and their export as JSON Schema. Keys are snake_case, like the Targon
 * API's. These schemas are snapshotted under schemas/ (npm run schemas); a test fails on any unintended change, and
 * the end-to-end tests validate real output against them.
 */
import * as z from 'zod'

import {EXIT_CODES, type ErrorCode, WHO_MUST_ACT} from '../core/errors.js'
import {CopyResultSchema} from '../workflows/copy/schema.js'
import {DownResultSchema} from '../workflows/down/schema.js'
import {DstackScaleResultSchema} from '../workflows/dstack-scale/schema.js'
import {DstackSyncResultSchema} from '../workflows/dstack/schema.js'
import {RunEventSchema} from '../adapters/events/schema.js'
import {ExecResultSchema} from '../workflows/exec/schema.js'
import {ExtendResultSchema} from '../workflows/extend/schema.js'
import {
  GuardInstallResultSchema,
  GuardPrintResultSchema,
  GuardStatusResultSchema,
  GuardUninstallResultSchema,
} from '../workflows/guard/schema.js'
import {LogsResultSchema} from '../workflows/logs/schema.js'
import {OffersResultSchema} from '../workflows/offers/schema.js'
import {ConfigListResultSchema, ConfigProfileResultSchema, ConfigResultSchema} from '../workflows/config/schema.js'
import {CostResultSchema, CreditsResultSchema} from '../workflows/spend/schema.js'
import {SshConfigResultSchema, SshResultSchema} from '../workflows/ssh/schema.js'
import {StatusResultSchema} from '../workflows/status/schema.js'
import {SweepResultSchema} from '../workflows/sweep/schema.js'
import {UpPlanSchema, UpResultSchema} from '../workflows/up/schema.js'
import {
  JobCancelResultSchema,
  JobFetchResultSchema,
  JobLogsResultSchema,
  JobsResultSchema,
  JobPlanSchema,
  JobOutcomeSchema,
} from '../workflows/job/schema.js'

export const VersionResultSchema = z.object({
  version: z.string().describe('the version of targon (package targon-fleet)'),
  node: z.string().describe('the version of Node.js it runs on'),
  platform: z.string().describe('operating system and CPU, e.g. linux-x64'),
})
export type VersionResult = z.infer<typeof VersionResultSchema>

export const DATA_SCHEMAS = {
  'config get': ConfigResultSchema,
  'config list': ConfigListResultSchema,
  'config remove': ConfigProfileResultSchema,
  'config set': ConfigResultSchema,
  'config unset': ConfigResultSchema,
  'config use': ConfigProfileResultSchema,
  cost: CostResultSchema,
  cp: CopyResultSchema,
  credits: CreditsResultSchema,
  down: DownResultSchema,
  'dstack scale': DstackScaleResultSchema,
  'dstack sync': DstackSyncResultSchema,
  exec: ExecResultSchema,
  extend: ExtendResultSchema,
  'guard install': GuardInstallResultSchema,
  'guard print': GuardPrintResultSchema,
  'guard status': GuardStatusResultSchema,
  'guard uninstall': GuardUninstallResultSchema,
  jobs: JobsResultSchema,
  'jobs cancel': JobCancelResultSchema,
  'jobs fetch': JobFetchResultSchema,
  'jobs logs': JobLogsResultSchema,
  'jobs wait': JobOutcomeSchema,
  logs: LogsResultSchema,
  offers: OffersResultSchema,
  run: z.union([JobOutcomeSchema, JobPlanSchema]),
  ssh: z.union([SshResultSchema, SshConfigResultSchema]),
  status: StatusResultSchema,
  sweep: SweepResultSchema,
  up: z.union([UpResultSchema, UpPlanSchema]),
  version: VersionResultSchema,
} as const

export type CommandId = keyof typeof DATA_SCHEMAS

/**
 * The `schema_version` of each command's success envelope, 1 unless listed: raised when its `data` changes in a way a
 * script would notice (a field renamed or removed), and the change written in docs/json-contract-changes.md. The
 * error envelope, the same on every command, has a version of its own.
 */
const SCHEMA_VERSIONS: Partial<Record<CommandId, number>> = {cost: 2, credits: 2, status: 2, sweep: 2, up: 2}
export const ERROR_SCHEMA_VERSION = 1

export function schemaVersion(command: string): number {
  return SCHEMA_VERSIONS[command as CommandId] ?? 1
}

/** What a command's run returns: its `data`, as its schema says. */
export type CommandResult<Id extends CommandId> = z.infer<(typeof DATA_SCHEMAS)[Id]>

/** Every envelope says which account the run acted on. */
const ACTING = {
  org: z
    .string()
    .nullable()
    .describe('the org the command acted on; null where none applies (offers, config, or a failure before it was known)'),
  profile: z.string().nullable().describe('the profile of the config file whose settings the run used; null where none applies'),
}

export const ErrorEnvelopeSchema = z.object({
  schema_version: z.literal(ERROR_SCHEMA_VERSION),
  ok: z.literal(false),
  command: z.string(),
  ...ACTING,
  error: z.object({
    code: z.enum(Object.keys(EXIT_CODES) as [ErrorCode, ...ErrorCode[]]).describe(
      'machine code; each has one exit code: ' +
        Object.entries(EXIT_CODES)
          .map(([code, exit]) => `${code} ${exit}`)
          .join(', '),
    ),
    exit_code: z
      .number()
      .describe(
        'as in the exit-code table of docs/guides/scripting.md; INTERRUPTED is 128 + the signal number: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 143 SIGTERM',
      ),
    message: z.string(),
    hint: z.string().nullable(),
    http_status: z.number().nullable(),
    reason: z.string().nullable().describe("the API's reason code"),
    request_id: z.string().nullable(),
    resource: z.object({uid: z.string().optional(), name: z.string().optional()}).nullable(),
    details: z.record(z.string(), z.unknown()),
    who_must_act: z
      .enum(WHO_MUST_ACT)
      .describe(
        "who must act: user (usage, config, or a refusal for price, capacity, credits or quota that is the user's to decide), targon (the API or a VM misbehaved: Targon must act, or retry later), bug (an error of targon: report it)",
      ),
  }),
  data: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('partial results or the clean-up outcome; for RUNWAY_SHORT, the whole result of targon credits'),
  warnings: z.array(z.string()).describe('what the run noticed before it failed, as on stderr without --json'),
})
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>

export function successEnvelope<T extends z.ZodType>(command: string, data: T) {
  return z.object({
    schema_version: z.literal(schemaVersion(command)),
    ok: z.literal(true),
    command: z.literal(command),
    ...ACTING,
    data,
    warnings: z.array(z.string()),
  })
}

/** JSON Schema documents, by file name under schemas/. */
export function jsonSchemas(): Record<string, unknown> {
  const files: Record<string, unknown> = {'error.json': z.toJSONSchema(ErrorEnvelopeSchema), 'events.json': z.toJSONSchema(RunEventSchema)}
  for (const [command, schema] of Object.entries(DATA_SCHEMAS)) {
    files[`${command.replace(' ', '-')}.json`] = z.toJSONSchema(successEnvelope(command, schema))
  }

  return files
}
