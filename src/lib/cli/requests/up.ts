/**
 * `targon up`'s flags and resolved settings, as what its workflows are asked (runUp, planUp), or the usage error
 * (exit 2) that the flags earn. Pure: the command reads the settings first.
 */
import {DEFAULT_TIMEOUT} from '../up-flags.js'
import {usageError} from '../../core/errors.js'
import {parseDuration} from '../../core/input.js'
import {DEFAULT_HOOK_TIMEOUT_MS, hookCommandProblem} from '../../domain/hooks/hook.js'
import type {UpPlanAsk} from '../../workflows/up/plan.js'
import type {OnFailure} from '../../workflows/up/schema.js'
import type {UpBootstrapSettings, UpSettingFlags, UpSettingValues} from '../../workflows/up/settings.js'

/** up's resource argument and the flags the request is made of (durations in ms, as the duration flags give them). */
export interface UpFlags extends UpSettingFlags {
  resource?: string
  count: number
  'dry-run': boolean
  dstack: boolean
  'force-shim': boolean
  gpu?: string
  'gpu-test': boolean
  'hook-timeout'?: number
  idle?: number
  'idle-check'?: string
  'idle-containers'?: boolean
  'max-cost'?: number
  min?: number
  'min-gpus'?: number
  name?: string
  notify?: string
  'on-delete'?: string
  'on-failure': OnFailure
  reinstall: boolean
  shim: boolean
  timeout?: number
  ttl?: number
}

/** What one `targon up` is asked: the run (or its dry run), and what the command does around it. */
export interface UpCommandRequest {
  /** What runUp (with the run's config directory and reconcile window) and planUp are asked. */
  ask: UpPlanAsk
  dryRun: boolean
  /** up --dstack: the ready VMs go into dstack's fleet. */
  dstack: boolean
  /** The --notify flag (a URL on the command line, refused; see useNotifyUrl). */
  notifyUrl?: string
}

/** The usage errors of the flags alone, thrown before any setting is read. */
export function checkUpFlags(flags: UpFlags): void {
  const {resource} = flags
  if (!resource && !flags.gpu && !flags.name)
    throw usageError('no resource given', 'name a resource (targon up rtx6000b-small ...) or a GPU model (--gpu h200)')
  if (resource && flags.gpu) throw usageError('give either a resource or --gpu, not both', 'drop one of them')
  if (flags['min-gpus'] !== undefined && !flags.gpu) throw usageError('--min-gpus needs --gpu', 'add --gpu <model>')
  if (flags.name !== undefined && flags.count > 1)
    throw usageError('--name works with --count 1 only', 'drop --name to get generated names')
  if (!flags.bootstrap && (flags.idle !== undefined || flags['idle-check'] !== undefined || flags['idle-containers'] !== undefined))
    throw usageError(
      '--idle, --idle-check and --idle-containers need the bootstrap, which installs the idle sampler',
      'drop --no-bootstrap',
    )
  if (flags['hook-timeout'] !== undefined && flags['on-delete'] === undefined)
    throw usageError('--hook-timeout needs --on-delete', 'add --on-delete CMD, the hook it limits')
  const hookProblem = flags['on-delete'] === undefined ? null : hookCommandProblem(flags['on-delete'])
  if (hookProblem) throw usageError(hookProblem, 'give one line of at most 4 KiB, e.g. a script on the VM: --on-delete "~/save.sh"')
  if (!flags.bootstrap && flags['on-delete'] !== undefined)
    throw usageError('--on-delete needs the bootstrap, which prepares the VM for it', 'drop --no-bootstrap')
  if (flags['force-shim'] && !(flags.bootstrap && flags.shim))
    throw usageError('--force-shim needs the shim-start phase', 'drop --no-bootstrap and --no-shim')
  if (flags.min !== undefined && flags.min > flags.count)
    throw usageError(`--min ${flags.min} is more than --count ${flags.count}`, 'lower --min or raise --count')
}

/** The price cap's usage error, thrown before the other settings are read: only adopting by --name goes without one. */
export function checkPriceCap(flags: UpFlags, maxPrice: number | null): void {
  if (maxPrice === null && (flags.resource || flags.gpu))
    throw usageError('a price cap is required', 'pass --max-price <USD per hour>, e.g. --max-price 1.8')
}

/** The whole request, or the first usage error the flags earn (the same checks as above, in the same order). */
export function parseUpRequest(flags: UpFlags, settings: UpSettingValues): UpCommandRequest {
  checkUpFlags(flags)
  checkPriceCap(flags, settings.maxPrice)
  const ask: UpPlanAsk = {
    bootstrap: flags.bootstrap ? bootstrapAsk(flags, readWith('the bootstrap', settings.bootstrap)) : null,
    capacity: flags.wait === undefined ? null : {waitMs: flags.wait, pollFloorMs: readWith('--wait', settings.capacityPollIntervalMs)},
    count: flags.count,
    fleet: settings.fleet,
    gpu: flags.gpu,
    image: settings.image,
    label: flags.name,
    maxCostUsd: flags['max-cost'],
    maxPrice: settings.maxPrice,
    min: flags.min,
    minGpus: flags['min-gpus'],
    onFailure: flags['on-failure'],
    owner: settings.owner,
    resource: flags.resource,
    timeoutMs: flags.timeout ?? parseDuration(DEFAULT_TIMEOUT, '--timeout'),
    ttlMs: flags.ttl,
  }
  return {ask, dryRun: flags['dry-run'], dstack: flags.dstack, notifyUrl: flags.notify}
}

/** What the bootstrap of each VM is asked: checked before anything is rented, not when a phase needs it. */
function bootstrapAsk(flags: UpFlags, settings: UpBootstrapSettings): NonNullable<UpPlanAsk['bootstrap']> {
  const onDelete = flags['on-delete']
  return {
    dstackVersion: settings.dstackVersion,
    gpuTest: flags['gpu-test'],
    pullRetryDelayMs: settings.pullRetryDelayMs,
    reinstall: flags.reinstall,
    forceShim: flags['force-shim'],
    shim: flags.shim,
    shimHealthTimeoutMs: settings.shimHealthTimeoutMs,
    stateWatchIntervalMs: settings.stateWatchIntervalMs,
    idle: {
      check: flags['idle-check'],
      containers: flags['idle-containers'],
      intervalMs: settings.idleSampleIntervalMs,
      limitMs: flags.idle,
    },
    // '' removes the hook; without --on-delete the VM keeps what it has.
    onDelete:
      onDelete === undefined
        ? undefined
        : onDelete === ''
          ? null
          : {command: onDelete, timeout_s: Math.ceil((flags['hook-timeout'] ?? DEFAULT_HOOK_TIMEOUT_MS) / 1000)},
  }
}

/** A setting the flags need, which readUpSettings reads whenever they do. */
function readWith<T>(flag: string, value: T | undefined): T {
  if (value === undefined) throw new Error(`up: the settings of ${flag} were not read`)
  return value
}
