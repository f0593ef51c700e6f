/**
 * Flags that take a duration, an amount in USD or a point in time, parsed where they are declared: a command gets a
 * number (ms, USD, or epoch ms), its --help and flag snapshot say what the flag takes (DURATION, USD, DATE|TIME), and
 * a bad value is one usage error that names the flag, its range and an example.
 */
import {Flags} from '@oclif/core'

import {MAX_MUTATIONS_IN_FLIGHT} from '../adapters/targon/http.js'
import {type DurationFlag, parseDuration, parsePrice, parseTime} from '../core/input.js'

interface Described {
  summary: string
  description?: string
  exclusive?: string[]
}

/** A duration with a unit (90s, 20m, 6h, 1d, 1h30m) within the flag's range, as milliseconds. */
export function durationFlag(flag: DurationFlag, described: Described) {
  return Flags.custom<number>({...described, helpValue: '<DURATION>', parse: async (input) => parseDuration(input, flag)})()
}

/** A positive amount in USD, such as 1.8 or $20; `what` says what it is in the error's hint. */
export function usdFlag(flag: string, what: string, described: Described) {
  return Flags.custom<number>({...described, helpValue: '<USD>', parse: async (input) => parsePrice(input, flag, what)})()
}

/** A UTC date or an RFC 3339 time, as epoch ms; `end`: a date means the end of that day (see parseTime). */
export function timeFlag(flag: string, end: boolean, described: Described) {
  return Flags.custom<number>({...described, helpValue: '<DATE|TIME>', parse: async (input) => parseTime(input, flag, end)})()
}

/** --hooks / --no-hooks of the deleting commands (down, sweep): whether each VM's pre-delete hook runs first. */
export function hooksFlag() {
  return Flags.boolean({
    allowNo: true,
    default: true,
    summary: "Run each VM's pre-delete hook (up --on-delete) on the VM before deleting it; --no-hooks deletes without them.",
    description:
      "Hooks run as ubuntu over the pinned SSH connection, all at once (up to --parallel), before their VMs' DELETEs and outside each deletion's budget (VMs without a hook are deleted at once, without waiting for them), with TARGON_VM_NAME, TARGON_VM_UID and TARGON_DELETE_REASON (ttl, idle, max-cost, over-cost, down, or job-done for run --down). A hook that fails or outlasts its --hook-timeout is reported and the VM is deleted all the same; a VM that cannot be reached is deleted without its hook, and that is said; Ctrl-C during the hooks stops them and deletes at once. Never under --dry-run.",
  })
}

/** --parallel of the deleting commands: how many at once, up to the mutations the API client keeps in flight. */
export function parallelFlag(summary: string) {
  return Flags.integer({default: MAX_MUTATIONS_IN_FLIGHT, max: MAX_MUTATIONS_IN_FLIGHT, min: 1, summary})
}
