/** The dstack-shim version the bootstrap installs: the default, and the rule for a version given by the user. */
import {usageError} from '../../core/errors.js'

export const DEFAULT_DSTACK_VERSION = '0.21.2'

const VERSION_PATTERN = /^(latest|\d+\.\d+\.\d+([-.][0-9A-Za-z.]+)?)$/

/** A release such as 0.21.2, or `latest`; anything else could not be part of a download URL or a shell line. */
export function validateDstackVersion(version: string): string {
  if (!VERSION_PATTERN.test(version))
    throw usageError(`--dstack-version "${version}" is not a version`, 'use a release such as 0.21.2, or latest')
  return version
}
