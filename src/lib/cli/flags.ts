/**
 * Flags that take a duration or an amount in USD, parsed where they are declared: a command gets a number (ms, or
 * USD), its --help and flag snapshot say what the flag takes (DURATION, USD), and a bad value is one usage error
 * that names the flag, its range and an example.
 */
import {Flags} from '@oclif/core'

import {type DurationFlag, parseDuration, parsePrice} from '../core/input.js'

interface Described {
  summary: string
  description?: string
}

/** A duration with a unit (90s, 20m, 6h, 1d, 1h30m) within the flag's range, as milliseconds. */
export function durationFlag(flag: DurationFlag, described: Described) {
  return Flags.custom<number>({...described, helpValue: '<DURATION>', parse: async (input) => parseDuration(input, flag)})()
}

/** A positive amount in USD, such as 1.8 or $20; `what` says what it is in the error's hint. */
export function usdFlag(flag: string, what: string, described: Described) {
  return Flags.custom<number>({...described, helpValue: '<USD>', parse: async (input) => parsePrice(input, flag, what)})()
}
