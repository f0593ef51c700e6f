/**
 * dstack's request models for SSH fleets, as pydantic parses them (dstack 0.21.2): unknown fields are refused
 * (`CoreModel`: extra="forbid"), required ones must be there, and every default is filled in, so that two specs compare
 * the way dstack compares them. Sources, under src/dstack/_internal/: core/models/fleets.py (FleetSpec,
 * FleetConfiguration, SSHParams, SSHHostParams, SSHProxyParams, Fleet, ApplyFleetPlanInput), core/models/profiles.py
 * (Profile), core/models/instances.py (SSHKey, Instance), core/models/envs.py (Env), core/models/common.py (CoreModel).
 * Fields that an SSH fleet may not set (resources, nodes...) are kept as sent, not parsed: any value but the default is
 * refused later anyway (services/fleets.py, _validate_fleet_configuration_subtype_specific_fields).
 */

/** One item of FastAPI's 422 answer: `{"detail": [{type, loc, msg, input}]}`. */
export interface ValidationIssue {
  type: string
  loc: (number | string)[]
  msg: string
  input: unknown
}

export class ValidationFailure extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super('request validation failed')
  }
}

type Json = Record<string, unknown>
/** The default of a field that has none. */
export const REQUIRED = Symbol('required')
type Defaults = Record<string, unknown>
type Nested = Record<string, (value: unknown, loc: (number | string)[], issues: ValidationIssue[]) => unknown>

/** A model's fields in pydantic's order, each with its default (or REQUIRED), and parsers for the nested ones. */
export function parseModel(
  value: unknown,
  loc: (number | string)[],
  issues: ValidationIssue[],
  defaults: Defaults,
  nested: Nested = {},
): Json {
  if (!isObject(value)) {
    issues.push({
      input: value,
      loc,
      msg: 'Input should be a valid dictionary or object to extract fields from',
      type: 'model_attributes_type',
    })
    return {}
  }

  for (const key of Object.keys(value))
    if (!(key in defaults))
      issues.push({input: value[key], loc: [...loc, key], msg: 'Extra inputs are not permitted', type: 'extra_forbidden'})
  const parsed: Json = {}
  for (const [key, fallback] of Object.entries(defaults)) {
    if (!(key in value) || value[key] === undefined) {
      if (fallback === REQUIRED) issues.push({input: value, loc: [...loc, key], msg: 'Field required', type: 'missing'})
      else parsed[key] = structuredClone(fallback)
      continue
    }

    const parse = nested[key]
    parsed[key] = value[key] === null || !parse ? value[key] : parse(value[key], [...loc, key], issues)
  }

  return parsed
}

const sshKey = (value: unknown, loc: (number | string)[], issues: ValidationIssue[]) =>
  parseModel(value, loc, issues, {public: REQUIRED, private: null}, {private: text, public: text})

const proxy = (value: unknown, loc: (number | string)[], issues: ValidationIssue[]) =>
  parseModel(
    value,
    loc,
    issues,
    {hostname: REQUIRED, port: null, user: REQUIRED, identity_file: REQUIRED, ssh_key: null},
    {hostname: text, port: integer, ssh_key: sshKey, user: text},
  )

const HOST_DEFAULTS = {
  hostname: REQUIRED,
  port: null,
  user: null,
  identity_file: null,
  proxy_jump: null,
  internal_ip: null,
  ssh_key: null,
  blocks: null,
}

/** `List[Union[SSHHostParams, str]]`: a hostname, or an object that overrides the fleet's SSH parameters. */
function hosts(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  if (!Array.isArray(value)) {
    issues.push({input: value, loc, msg: 'Input should be a valid list', type: 'list_type'})
    return []
  }

  return value.map((host, index) =>
    typeof host === 'string'
      ? host
      : parseModel(host, [...loc, index], issues, HOST_DEFAULTS, {
          hostname: text,
          port: integer,
          proxy_jump: proxy,
          ssh_key: sshKey,
          user: text,
        }),
  )
}

const sshParams = (value: unknown, loc: (number | string)[], issues: ValidationIssue[]) =>
  parseModel(
    value,
    loc,
    issues,
    {user: null, port: null, identity_file: null, ssh_key: null, proxy_jump: null, hosts: REQUIRED, network: null},
    {hosts, port: integer, proxy_jump: proxy, ssh_key: sshKey, user: text},
  )

/** `Env`: a list of `VAR=value` strings becomes the mapping dstack stores. */
function env(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  if (Array.isArray(value)) return Object.fromEntries(value.map((item) => String(item).split(/=(.*)/s, 2) as [string, string]))
  if (isObject(value)) return value
  issues.push({input: value, loc, msg: 'Input should be a valid dictionary', type: 'dict_type'})
  return {}
}

/** The fields an SSH fleet must leave at their defaults (BackendFleetConfiguraionProps), in pydantic's order. */
export const BACKEND_FLEET_FIELDS = [
  'nodes',
  'reservation',
  'resources',
  'backends',
  'regions',
  'availability_zones',
  'instance_types',
  'spot_policy',
  'retry',
  'max_price',
  'idle_duration',
  'tags',
  'backend_options',
]

/** FleetConfiguration's fields: CommonFleetConfigurationProps, then BackendFleetConfiguraionProps, then the SSH ones. */
const CONFIGURATION_DEFAULTS: Defaults = {
  type: 'fleet',
  name: null,
  placement: null,
  blocks: 1,
  ...Object.fromEntries(BACKEND_FLEET_FIELDS.map((field) => [field, null])),
  ssh_config: null,
  env: {},
}

function configuration(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): Json {
  const parsed = parseModel(value, loc, issues, CONFIGURATION_DEFAULTS, {env, name: text, ssh_config: sshParams})
  if (parsed.type !== 'fleet')
    issues.push({input: parsed.type, loc: [...loc, 'type'], msg: "Input should be 'fleet'", type: 'literal_error'})
  return parsed
}

/** Profile: ProfileParams, then ProfileProps. */
const PROFILE_DEFAULTS: Defaults = {
  backends: null,
  regions: null,
  availability_zones: null,
  instance_types: null,
  reservation: null,
  spot_policy: null,
  retry: null,
  max_duration: null,
  stop_duration: null,
  max_price: null,
  creation_policy: null,
  idle_duration: null,
  utilization_policy: null,
  startup_order: null,
  stop_criteria: null,
  schedule: null,
  fleets: null,
  instances: null,
  tags: null,
  backend_options: null,
  name: '',
  default: false,
}

const profile = (value: unknown, loc: (number | string)[], issues: ValidationIssue[]) => parseModel(value, loc, issues, PROFILE_DEFAULTS)

/** FleetSpec as dstack stores and answers it (`merged_profile` is accepted but never written out: exclude=True). */
export function parseFleetSpec(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): Json {
  const parsed = parseModel(
    value,
    loc,
    issues,
    {configuration: REQUIRED, configuration_path: null, profile: REQUIRED, autocreated: false, merged_profile: null},
    {configuration, profile},
  )
  delete parsed.merged_profile
  return parsed
}

/** The fields of an Instance (core/models/instances.py): an echoed fleet's instances may carry no others. */
const INSTANCE_DEFAULTS: Defaults = {
  id: REQUIRED,
  project_name: REQUIRED,
  backend: null,
  instance_type: null,
  name: REQUIRED,
  fleet_id: null,
  fleet_name: null,
  instance_num: REQUIRED,
  job_name: null,
  hostname: null,
  status: REQUIRED,
  unreachable: false,
  health_status: 'healthy',
  termination_reason: null,
  termination_reason_message: null,
  created: REQUIRED,
  finished_at: null,
  region: null,
  availability_zone: null,
  price: null,
  total_blocks: null,
  busy_blocks: 0,
  gpu_driver: null,
}

function instances(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  if (!Array.isArray(value)) {
    issues.push({input: value, loc, msg: 'Input should be a valid list', type: 'list_type'})
    return []
  }

  return value.map((item, index) => parseModel(item, [...loc, index], issues, INSTANCE_DEFAULTS))
}

/** Fleet, as a client echoes it back in `current_resource`. */
export function parseFleet(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): Json {
  return parseModel(
    value,
    loc,
    issues,
    {
      id: REQUIRED,
      name: REQUIRED,
      project_name: REQUIRED,
      spec: REQUIRED,
      created_at: REQUIRED,
      status: REQUIRED,
      status_message: null,
      instances: REQUIRED,
    },
    {instances, spec: parseFleetSpec},
  )
}

/** Parses a request body against a top-level model; throws ValidationFailure with every issue found, as FastAPI answers. */
export function parseBody(body: unknown, defaults: Defaults, nested: Nested = {}): Json {
  // A model without a default: the body itself is required.
  if (body === undefined) throw new ValidationFailure([{input: null, loc: ['body'], msg: 'Field required', type: 'missing'}])
  const issues: ValidationIssue[] = []
  const parsed = parseModel(body, ['body'], issues, defaults, nested)
  if (issues.length > 0) throw new ValidationFailure(issues)
  return parsed
}

function text(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  // coerce_numbers_to_str: a YAML number reaches a str field as a number.
  if (typeof value === 'number') return String(value)
  if (typeof value !== 'string') issues.push({input: value, loc, msg: 'Input should be a valid string', type: 'string_type'})
  return value
}

function integer(value: unknown, loc: (number | string)[], issues: ValidationIssue[]): unknown {
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value)
  if (!Number.isInteger(value)) issues.push({input: value, loc, msg: 'Input should be a valid integer', type: 'int_type'})
  return value
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** pydantic's `==` on two parsed models: the same fields with the same values. */
export function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => canonical(item))
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical(value[key])]),
    )
  return value
}

/** The fields of two parsed models that differ, in the model's order (services/diff.py, diff_models). */
export function changedFields(current: Json, next: Json): string[] {
  return Object.keys(current).filter((key) => !sameValue(current[key], next[key]))
}

/** How Python prints a list of strings or numbers in an error message: `['203.0.113.10']`, `[0, 2]`. */
export function pythonList(items: (number | string)[]): string {
  return `[${items.map((item) => (typeof item === 'number' ? String(item) : `'${item}'`)).join(', ')}]`
}
