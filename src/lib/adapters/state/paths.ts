/**
 * The one way a name from outside (a workload uid or name, an org slug: text an API answer carries) becomes part
 * of a local path. It is percent-encoded, so that a name of the safe pattern (letters, digits, `-`, `_`, `.`) stays
 * as it is and existing files keep working, while `/`, NUL and the rest cannot reach the path; "." and ".." are
 * encoded too; and the result is checked to be a direct child of its directory.
 */
import {join, relative} from 'node:path'

import {TargonError} from '../../core/errors.js'

/** `dir/<encoded id><suffix>`; BAD_RESPONSE for an empty id. */
export function childPath(dir: string, id: string, suffix = ''): string {
  if (id === '')
    throw new TargonError('BAD_RESPONSE', 'an empty identifier cannot name a local file', {hint: 'report the answer of the API'})
  const encoded = encodeURIComponent(id)
  const name = (/^\.+$/.test(encoded) ? encoded.replaceAll('.', '%2E') : encoded) + suffix
  const path = join(dir, name)
  const within = relative(dir, path)
  if (within !== name || name.includes('/')) {
    throw new TargonError('BAD_RESPONSE', `the identifier ${JSON.stringify(id)} would name a file outside ${dir}`, {
      hint: 'report the answer of the API',
    })
  }

  return path
}

/** The id a childPath file name stands for. */
export function idOfChild(name: string, suffix = ''): string {
  return decodeURIComponent(name.slice(0, name.length - suffix.length))
}
