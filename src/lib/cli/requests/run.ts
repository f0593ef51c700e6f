/**
 * `targon run`'s request: its flags, its words before and after --, and the fleet and price cap its settings resolved
 * to, checked into the job it asks for, or the usage error (exit 2) that refuses it before anything is read or rented.
 */
import {usageError} from '../../core/errors.js'
import {checkCommand, checkOutPath, parseEnv} from '../../workflows/job/job.js'
import type {JobRequest} from '../../workflows/job/run-request.js'

export interface RunFlags {
  detach: boolean
  down: boolean
  'dry-run': boolean
  env?: string[]
  gpu?: string
  hooks: boolean
  idle?: number
  'max-cost'?: number
  'no-sync': boolean
  out?: string[]
  ttl?: number
  wait?: number
  workdir?: string
}

export interface RunInput {
  flags: RunFlags
  /** The command line as given (with the --). */
  argv: string[]
  /** Its positional words (oclif drops the -- itself). */
  positionals: string[]
}

/** The settings `targon run` reads before it parses: the fleet, and the price cap (null: none set). */
export interface RunSettings {
  fleet: string
  maxPrice: number | null
}

export function parseRunRequest({argv, flags, positionals}: RunInput, settings: RunSettings): JobRequest {
  const {command, word} = splitAtDashes(argv, positionals, flags.gpu)
  const out = (flags.out ?? []).map((path) => checkOutPath(path))
  const env = (flags.env ?? []).map((assignment) => parseEnv(assignment))
  if (word === null && settings.maxPrice === null) throw usageError('a price cap is required to rent', 'pass --max-price <USD per hour>')
  return {
    command,
    detach: flags.detach,
    down: flags.down,
    dryRun: flags['dry-run'],
    env,
    fleet: settings.fleet,
    hooks: flags.hooks,
    out,
    rent:
      settings.maxPrice === null
        ? null
        : {
            gpu: flags.gpu,
            idleMs: flags.idle,
            maxCostUsd: flags['max-cost'],
            maxPrice: settings.maxPrice,
            ttlMs: flags.ttl,
            waitMs: flags.wait,
          },
    sync: !flags['no-sync'],
    word,
    workdir: flags.workdir,
  }
}

/** The VM before --, the command after it. */
function splitAtDashes(argv: string[], positionals: string[], gpu: string | undefined): {word: string | null; command: string} {
  const dashes = argv.indexOf('--')
  if (dashes < 0) throw usageError('no command given', "put it after --: targon run VM -- 'python train.py'")
  const commandWords = argv.slice(dashes + 1)
  const before = positionals.slice(0, positionals.length - commandWords.length)
  if (before.length === 0 && gpu === undefined)
    throw usageError('no VM named', 'targon run VM -- COMMAND (targon status lists the VMs), or --gpu MODEL to rent one')
  if (before.length > 0 && gpu !== undefined)
    throw usageError(`${before.join(' ')} and --gpu both say where`, 'name a VM or an offer, or give --gpu alone')
  if (before.length > 1) throw usageError(`one VM only, got ${before.join(' ')}`, 'the command goes after --')
  return {command: checkCommand(commandWords.join(' ')), word: before[0] ?? null}
}
