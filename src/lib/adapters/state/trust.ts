/**
 * Which local files and directories targon trusts. A file is trusted by its owner and its mode, never by its mode
 * alone: on a shared machine another user can create a directory first, or plant a 0600 key of theirs, and a mode
 * check alone would accept it. What targon trusts is owned by the user it runs as and writable by nobody else;
 * secrets are readable by nobody else either. Nothing here changes a mode: a failed check is refused (CONFIG,
 * exit 3) with the fix, and the user decides.
 */
import {closeSync, constants, mkdirSync, fstatSync, lstatSync, openSync, readFileSync, readlinkSync, type Stats} from 'node:fs'
import {dirname, resolve} from 'node:path'

import {TargonError} from '../../core/errors.js'

const currentUid = (): number | undefined => process.getuid?.()

/**
 * The cause of a refusal, run as root, of what another user owns: under sudo, HOME (and so the default config
 * directory) may still be the invoking user's. Who that is, the run's settings know (SettingsResolver.sudoUser); the
 * command's base then says so in the hint (see sudoHint).
 */
export class OwnedByAnother extends Error {
  constructor(readonly ownerUid: number) {
    super(`owned by uid ${ownerUid}`)
    this.name = 'OwnedByAnother'
  }
}

/** The hint of a refusal of another user's file or directory, when that user is the one who ran sudo. */
export function sudoHint(sudoUser: string): string {
  return `it is ${sudoUser}'s: run targon without sudo, or set TARGON_CONFIG_DIR to a directory of root's`
}

/**
 * The config directory: a symbolic link (into a dotfiles repository, say) is followed once and its target checked;
 * a link to a link is refused. A missing directory passes (it is created 0700 when needed).
 */
export function assertConfigDir(dir: string): void {
  const found = lstatOrUndefined(dir)
  if (!found) return
  if (!found.isSymbolicLink()) return checkDir(dir, found, 'config directory')
  // The link itself must be ours, in a directory nobody else may replace it in: the path is resolved again later.
  checkOwner(dir, found, 'config directory link')
  const parent = lstatOrUndefined(dirname(dir))
  if (parent && (parent.mode & 0o022) !== 0 && (parent.mode & 0o1000) === 0)
    throw new TargonError('CONFIG', `config directory ${dir} is a link in ${dirname(dir)}, which other users can write`, {
      hint: `point TARGON_CONFIG_DIR at the directory itself`,
    })
  const target = resolve(dirname(dir), readlinkSync(dir))
  const targetStats = lstatOrUndefined(target)
  if (!targetStats) return
  if (targetStats.isSymbolicLink())
    throw new TargonError('CONFIG', `config directory ${dir} links to ${target}, itself a link`, {
      hint: `point ${dir} (or TARGON_CONFIG_DIR) straight at the directory`,
    })
  checkDir(target, targetStats, `config directory ${dir} ->`)
}

/** A directory inside the config directory (keys/, known_hosts.d/): no link, this user's, writable by nobody else. */
export function assertOwnDir(dir: string, what: string): void {
  const found = lstatOrUndefined(dir)
  if (!found) return
  if (found.isSymbolicLink()) throw new TargonError('CONFIG', `${what} ${dir} is a symbolic link`, {hint: `replace it with a directory`})
  checkDir(dir, found, what)
}

/** A file holding a secret (the config file, a private key): this user's, and neither readable nor writable by others. */
export function assertSecretFile(path: string, what: string): void {
  const found = lstatOrUndefined(path)
  if (found) checkFile(path, found, what, 0o077)
}

/**
 * The text of a state file (a record, a delete note, an org cache), read without following a link and only if this
 * user owns it and nobody else can write it; otherwise it throws, and the caller treats the file as unreadable.
 */
export function readOwnFile(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    checkFile(path, fstatSync(fd), 'state file', 0o022)
    return readFileSync(fd, 'utf8')
  } finally {
    closeSync(fd)
  }
}

function checkDir(path: string, stats: Stats, what: string): void {
  if (!stats.isDirectory()) throw new TargonError('CONFIG', `${what} ${path} is not a directory`, {hint: `move it away and run again`})
  checkOwner(path, stats, what)
  const mode = stats.mode & 0o777
  if ((mode & 0o022) !== 0)
    throw new TargonError('CONFIG', `${what} ${path} is writable by other users (mode ${mode.toString(8)})`, {
      hint: `run: chmod go-w ${path}`,
    })
}

function checkFile(path: string, stats: Stats, what: string, mask: number): void {
  if (stats.isSymbolicLink() || !stats.isFile())
    throw new TargonError('CONFIG', `${what} ${path} is not a regular file`, {hint: `move it away and run again`})
  checkOwner(path, stats, what)
  const mode = stats.mode & 0o777
  if ((mode & mask) !== 0) {
    const access = (mode & 0o022) !== 0 ? 'writable' : 'readable'
    throw new TargonError('CONFIG', `${what} ${path} is ${access} by other users (mode ${mode.toString(8)})`, {
      hint: `run: chmod ${mask === 0o077 ? '600' : 'go-w'} ${path}`,
    })
  }
}

function checkOwner(path: string, stats: Stats, what: string): void {
  const uid = currentUid()
  if (uid === undefined || stats.uid === uid) return
  throw new TargonError('CONFIG', `${what} ${path} belongs to another user (uid ${stats.uid})`, {
    cause: uid === 0 ? new OwnedByAnother(stats.uid) : undefined,
    hint: 'use a directory of your own (TARGON_CONFIG_DIR), or have its owner remove it',
  })
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

/** Creates the config directory (0700) if needed and returns it; an existing one must be trusted (see trust.ts). */
export function ensureConfigDir(dir: string): string {
  try {
    mkdirSync(dir, {mode: 0o700, recursive: true})
  } catch (error) {
    throw new TargonError('CONFIG', `cannot create the config directory ${dir}: ${(error as Error).message}`, {
      hint: 'make it writable, or point TARGON_CONFIG_DIR at a writable directory',
    })
  }

  assertConfigDir(dir)
  return dir
}
