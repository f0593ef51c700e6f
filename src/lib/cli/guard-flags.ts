/** The flags that say which scheduler a guard command is about, and how often the guard runs. */
import {Flags} from '@oclif/core'

import {durationFlag} from './flags.js'
import {usageError} from '../core/errors.js'
import type {GuardKind} from '../workflows/guard/guard.js'

export const KIND_FLAGS = {
  cron: Flags.boolean({default: false, summary: "A line in this user's crontab.", exclusive: ['systemd']}),
  systemd: Flags.boolean({
    default: false,
    summary: 'A systemd service and timer: system units as root, user units otherwise.',
    exclusive: ['cron'],
  }),
}

export const TEAM_FLAG = Flags.boolean({
  default: false,
  summary:
    "The org's team guard: sweep every owner's VMs by the limits they carry (targon sweep --team), over a key of its own that every later up adds to the VMs it makes. Registers that key with the org.",
})

export const EVERY_FLAG = durationFlag('--every', {
  summary: 'How often the sweep runs: a period that divides an hour or a day (default 5m).',
})

export const DEFAULT_EVERY_MS = 5 * 60_000

export function kindOf(flags: {cron: boolean; systemd: boolean}): GuardKind {
  if (flags.cron) return 'cron'
  if (flags.systemd) return 'systemd'
  throw usageError('say where the guard is scheduled', 'pass --cron (a crontab line) or --systemd (a service and a timer)')
}
