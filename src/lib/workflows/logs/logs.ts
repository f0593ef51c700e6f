/**
 * The logs workflow: a VM's serial console as the API serves it, its last lines, and following it by
 * polling. Also the console tail that `up` attaches to an error when a VM never came up.
 */

import type {LogsResult} from './schema.js'
import {findOneVm, readFleet} from '../../domain/fleet/fleet-read.js'
import type {OwnerScope} from '../../domain/fleet/owners.js'
import {TargonError, abortError} from '../../core/errors.js'
import {poll} from '../../core/poll.js'
import type {LocalState} from '../../adapters/state/local-state.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {MAX_BODY_BYTES} from '../../adapters/targon/http.js'
import {recordFleetRead} from '../../domain/ledger/ledger.js'
import type {ListingRun} from '../../domain/fleet/run.js'

/** How often --follow asks for the console again. */
export const FOLLOW_INTERVAL_MS = 2000
/** With --follow, how many of the latest lines the result keeps (they are printed as they come). */
const FOLLOW_KEPT_LINES = 1000
/** --follow gives up after this many failed reads in a row (a VM deleted meanwhile ends it quietly). */
const FOLLOW_MAX_FAILURES = 5
/** Lines of console that an error of `up` carries. */
export const CONSOLE_TAIL_LINES = 20

export interface LogsOptions {
  org: string
  owners: OwnerScope
  target: string
  fleet: string
  tail?: number
  follow: boolean
  signal?: AbortSignal
  intervalMs?: number
  /** Receives the lines as they come: the first read, then each new batch with --follow. */
  onLines?: (lines: string[]) => void
}

export async function runLogs(run: ListingRun, client: TargonClient, state: LocalState, options: LogsOptions): Promise<LogsResult> {
  const view = await readFleet(client, options.org, state, {
    clock: run.clock,
    historyBudget: run.historyBudget,
    readOwners: options.owners.owner !== null,
  })
  recordFleetRead(state, options.org, view, run.clock)
  const vm = findOneVm(
    view.vms.filter((each) => !each.gone),
    options.target,
    options.fleet,
    options.owners,
  )
  let warnedLarge = false
  // Over the body cap Targon's log keeps only its tail; said once.
  const onTruncated = () => {
    if (!warnedLarge) run.warn(`the console log of ${vm.name ?? vm.uid} is over ${MAX_BODY_BYTES / 1024 / 1024} MiB: only its end is shown`)
    warnedLarge = true
  }

  let all = await client.consoleLog(options.org, vm.uid, {onTruncated})
  const lines = options.tail === undefined ? all : options.tail === 0 ? [] : all.slice(-options.tail)
  options.onLines?.(lines)
  const result: LogsResult = {
    fleet: vm.fleet,
    lines,
    name: vm.name,
    status: vm.status,
    tail: options.tail ?? null,
    type: 'serial',
    uid: vm.uid,
  }
  if (!options.follow) return result

  let failures = 0
  // The first read was just made: the next comes an interval later.
  const {clock} = run
  await clock.sleep(options.intervalMs ?? FOLLOW_INTERVAL_MS, options.signal)
  const followed = await poll(
    async () => {
      let next: string[]
      try {
        next = await client.consoleLog(options.org, vm.uid, {onTruncated})
        failures = 0
      } catch (error) {
        if (options.signal?.aborted) throw abortError(options.signal)
        if (error instanceof TargonError && error.code === 'NOT_FOUND') {
          run.warn(`${vm.name ?? vm.uid} is gone: no more console output`)
          return result
        }

        if (++failures >= FOLLOW_MAX_FAILURES) throw error
        run.warn(`reading the console failed (${(error as Error).message}); trying again`)
        return undefined
      }

      const fresh = newLines(all, next)
      all = next
      if (fresh.length > 0) {
        // The lines went out as they came; the result keeps only the latest, so that following never grows without bound.
        result.lines.push(...fresh)
        result.lines.splice(0, Math.max(0, result.lines.length - FOLLOW_KEPT_LINES))
        options.onLines?.(fresh)
      }

      return undefined
    },
    // Until the VM is gone or the user stops it (Ctrl-C).
    {clock, deadline: Number.POSITIVE_INFINITY, delayMs: () => options.intervalMs ?? FOLLOW_INTERVAL_MS, signal: options.signal},
  )
  return followed ?? result
}

/**
 * The lines of `next` that follow what `previous` showed. The API may serve a moving window: then the longest
 * end of `previous` that starts `next` is skipped; with no overlap at all, everything in `next` is new.
 */
export function newLines(previous: string[], next: string[]): string[] {
  if (previous.length === 0) return next
  if (next.length >= previous.length && next[previous.length - 1] === previous.at(-1) && next[0] === previous[0])
    return next.slice(previous.length)
  for (let overlap = Math.min(previous.length, next.length); overlap > 0; overlap--) {
    const end = previous.slice(-overlap)
    if (end.every((line, index) => line === next[index])) return next.slice(overlap)
  }

  return next
}

/** The last console lines of a VM, or undefined when they cannot be read (this is only ever extra detail). */
export async function consoleTail(
  client: TargonClient,
  org: string,
  uid: string,
  lines = CONSOLE_TAIL_LINES,
): Promise<string[] | undefined> {
  try {
    const tail = await client.consoleLog(org, uid, {tail: lines, timeoutMs: 10_000})
    return tail.length > 0 ? tail : undefined
  } catch {
    return undefined
  }
}

/**
 * The error of a VM that never came up, with its last console lines in `details.console_tail` and the last
 * one in the hint. An interrupt is passed on as it is: nothing delays the exit.
 */
export async function withConsoleTail(
  client: TargonClient,
  org: string,
  vm: {uid: string; name: string},
  error: unknown,
): Promise<unknown> {
  if (!(error instanceof TargonError) || error.code === 'INTERRUPTED') return error
  const tail = await consoleTail(client, org, vm.uid)
  if (!tail) return error
  const last = tail.at(-1)?.trim() ?? ''
  const mention = `console: "${last.length > 120 ? `${last.slice(0, 120)}…` : last}" (targon logs ${vm.name} shows more)`
  return error.with({
    details: {...error.details, console_tail: tail},
    hint: error.hint ? `${error.hint}; ${mention}` : mention,
    resource: error.resource ?? {name: vm.name, uid: vm.uid},
  })
}
