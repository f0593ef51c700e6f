/**
 * Which local files and directories targon trusts. A file is trusted by its owner and its mode, never by its mode
 * alone: on a shared machine another user can create a directory first, or plant a 0600 key of theirs, and a mode
 * check alone would accept it. What targon trusts is owned by the user it runs as and writable by nobody else;
 * secrets are readable by nobody else either. Nothing here changes a mode: a failed check is refused (CONFIG,
 * exit 3) with the fix, and the user decides.
 */
import {
  closeSync,
  constants,
  mkdirSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  type Stats,
} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'

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
  if (!found.isSymbolicLink()) checkDir(dir, found, 'config directory')
  else checkConfigDirLink(dir, found)
  checkFoldersAboveConfigDir(dir)
}

function checkConfigDirLink(dir: string, found: Stats): void {
  // The link itself must be ours, in a directory nobody else may replace it in: the path is resolved again later.
  checkOwner(dir, found, 'config directory link')
  const target = resolve(dirname(dir), readlinkSync(dir))
  const targetStats = lstatOrUndefined(target)
  if (!targetStats) return
  if (targetStats.isSymbolicLink())
    throw new TargonError('CONFIG', `config directory ${dir} links to ${target}, itself a link`, {
      hint: `point ${dir} (or TARGON_CONFIG_DIR) straight at the directory`,
    })
  checkDir(target, targetStats, `config directory ${dir} ->`)
}

/**
 * The folders above the config directory, as ssh checks those above ~/.ssh (see unsafeFolderAbove): another user who
 * can rename or replace one of them can swap the whole directory, keys and records included.
 */
function checkFoldersAboveConfigDir(dir: string): void {
  const unsafe = unsafeFolderAbove(dir)
  if (!unsafe) return
  const owned = unsafe.ownerUid !== undefined
  throw new TargonError('CONFIG', `config directory ${dir} is inside ${unsafe.dir}, which ${unsafe.problem}`, {
    cause: owned && currentUid() === 0 ? new OwnedByAnother(unsafe.ownerUid as number) : undefined,
    hint: owned
      ? "set TARGON_CONFIG_DIR to a directory in folders of your own or root's"
      : `run: chmod go-w ${unsafe.dir} (or chmod +t ${unsafe.dir}, as /tmp is), or set TARGON_CONFIG_DIR to a directory elsewhere`,
  })
}

/** A folder through which another user could change what a path names: where it is, and why. */
export interface UnsafeFolder {
  dir: string
  /** "belongs to another user (uid N)" or "is writable by other users (mode N)". */
  problem: string
  /** The other user, when the folder is theirs. */
  ownerUid?: number
}

/**
 * The first folder above `path`, from / down, through which another user could change what `path` names; undefined
 * when there is none. As ssh checks the folders above ~/.ssh: each must be root's or this user's and writable by
 * nobody else, except a sticky folder (as /tmp) whose next step down is root's or this user's, since the sticky bit
 * keeps others from renaming or replacing that one. A link on the way is checked where it is (its owner) and the
 * path again as resolved. Missing parts end the walk: whoever creates them is this user.
 */
export function unsafeFolderAbove(path: string): UnsafeFolder | undefined {
  const written = resolve(path)
  const resolved = resolvedPath(written)
  for (const each of resolved === undefined || resolved === written ? [written] : [written, resolved]) {
    let dir = '/'
    let stats = lstatOrUndefined(dir)
    for (const part of each.split('/').filter(Boolean)) {
      if (!stats) break
      const next = join(dir, part)
      const nextStats = lstatOrUndefined(next)
      const problem = folderProblem(dir, stats, next, nextStats)
      if (problem) return problem
      dir = next
      stats = nextStats
    }
  }

  return undefined
}

/**
 * The first file or folder in `paths` (`deep`: folders with all they hold, links not followed: each is checked where
 * it is) that another user than this one and root could change: theirs, or writable by group or others (no
 * sticky-bit exception: code is read from these). Undefined when there is none.
 */
export function changeableByOthers(paths: string[], deep = true): UnsafeFolder | undefined {
  for (const path of paths) {
    const stats = lstatOrUndefined(path)
    if (!stats) continue
    if (!trustedOwner(stats.uid)) return ownedByAnother(path, stats.uid)
    if (!stats.isSymbolicLink() && (stats.mode & 0o022) !== 0)
      return {dir: path, problem: `is writable by other users (mode ${(stats.mode & 0o7777).toString(8)})`}
    if (deep && stats.isDirectory()) {
      const inside = changeableByOthers(readdirSync(path).map((name) => join(path, name)))
      if (inside) return inside
    }
  }

  return undefined
}

function folderProblem(dir: string, stats: Stats, next: string, nextStats: Stats | undefined): UnsafeFolder | undefined {
  if (!trustedOwner(stats.uid)) return ownedByAnother(dir, stats.uid)
  // A link's mode means nothing; where it leads is walked as resolved.
  if (stats.isSymbolicLink() || (stats.mode & 0o022) === 0) return undefined
  if ((stats.mode & 0o1000) === 0) return {dir, problem: `is writable by other users (mode ${(stats.mode & 0o7777).toString(8)})`}
  // Sticky (as /tmp): safe while the next step down is root's or ours; one of another user's is theirs to swap.
  return nextStats === undefined || trustedOwner(nextStats.uid) ? undefined : ownedByAnother(next, nextStats.uid)
}

function ownedByAnother(dir: string, uid: number): UnsafeFolder {
  return {dir, ownerUid: uid, problem: `belongs to another user (uid ${uid})`}
}

/** Root, or the user targon runs as: nobody else may be able to change what targon trusts. */
function trustedOwner(uid: number): boolean {
  const own = currentUid()
  return own === undefined || uid === own || uid === 0
}

/** The path with every link resolved, up to the first part that is missing (kept as written from there on). */
function resolvedPath(path: string): string | undefined {
  try {
    return realpathSync(path)
  } catch {
    const parent = dirname(path)
    if (parent === path) return undefined
    const resolved = resolvedPath(parent)
    return resolved === undefined ? undefined : join(resolved, basename(path))
  }
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
  // Before anything is created in them.
  if (!lstatOrUndefined(dir)) checkFoldersAboveConfigDir(dir)
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
