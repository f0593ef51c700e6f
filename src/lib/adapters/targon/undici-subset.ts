/**
 * The part of undici that the bundle ships (scripts/undici-core.cjs, which the build puts in place of `undici`:
 * see bin/start.js). The source imports undici through this module, so that using anything the bundle lacks
 * fails the type check instead of a run of the built CLI.
 */
import {Agent, type Dispatcher, errors as undiciErrors, request as undiciRequest} from 'undici'

export {Agent}

/** All of undici's error classes ship; these are the ones the CLI tells apart. */
export const errors: Pick<typeof undiciErrors, 'BodyTimeoutError' | 'HeadersTimeoutError'> = undiciErrors

/** The subset's request() needs the dispatcher and the method, which undici's own would default. */
export const request: (
  url: string | URL,
  options: Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & {dispatcher: Dispatcher},
) => Promise<Dispatcher.ResponseData> = undiciRequest
