/**
 * What `guard status` names as a problem of an installed guard, with the fix: a scheduled node or CLI that is gone,
 * a failed last sweep, a schedule that stopped or never started, and sweeps that all skip because one is stuck
 * holding the sweep lock. Logic alone: the clock and the file check are given.
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import type {GuardPass} from './schema.js'
import {formatDuration} from '../../core/input.js'
import {pingSucceeds} from '../../adapters/notify/heartbeat.js'
import type {InstalledGuard} from './installed.js'

export interface GuardFacts {
  configDir: string
  guards: InstalledGuard[]
  passes: GuardPass[]
  /** When install wrote the guard; null when not recorded. */
  installedAt: number | null
  log: string
  now: number
  exists?: (path: string) => boolean
}

/** A schedule may fire a minute late; past two periods and that minute, a pass is missing. */
const LATE_MS = 60_000

export function guardProblems(facts: GuardFacts): string[] {
  const {guards, now, passes} = facts
  const exists = facts.exists ?? existsSync
  const problems: string[] = []
  for (const guard of guards) {
    for (const [what, path] of [
      ['node', guard.node],
      ['CLI', guard.cli],
    ] as const)
      if (path === null || !exists(path))
        problems.push(
          `the ${guard.kind} guard runs a ${what} that is not there (${path ?? 'unreadable entry'}): run targon guard install again`,
        )
  }

  const last = passes.at(-1)
  // A failed sweep is what its heartbeat reports as one (a short runway is not).
  if (last && !pingSucceeds(last.exit_code)) problems.push(`the last sweep exited ${last.exit_code}: see ${facts.log}`)
  const every = guards.find((guard) => guard.everyMs !== null)?.everyMs ?? null
  if (every === null) return problems
  const due = 2 * every + LATE_MS
  const cadence = `with one due every ${formatDuration(every)}`
  if (!last) {
    if (facts.installedAt !== null && now - facts.installedAt > due)
      problems.push(
        `no sweep has run since the guard was installed ${formatDuration(now - facts.installedAt)} ago, ${cadence}: is cron or the timer running (systemctl list-timers, or cron's log)?`,
      )
    return problems
  }

  if (now - Date.parse(last.at) > due) {
    problems.push(`no sweep ran for ${formatDuration(now - Date.parse(last.at))}, ${cadence}: is cron or the timer running?`)
    return problems
  }

  if (!last.skipped) return problems
  // Every pass since the last real one skipped: a sweep holds the lock and enforces nothing.
  const lastReal = passes.findLast((pass) => !pass.skipped)
  const since = lastReal ? Date.parse(lastReal.at) : (facts.installedAt ?? Date.parse((passes[0] as GuardPass).at))
  if (now - since > due)
    problems.push(
      `every sweep for ${formatDuration(now - since)} was skipped because another sweep holds the sweep lock: one is stuck and nothing is enforced; end the process whose pid is in ${join(facts.configDir, 'locks')}/sweep-*.lock, and see ${facts.log}`,
    )
  return problems
}
