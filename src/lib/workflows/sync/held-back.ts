/**
 * What a sync holds back whatever the ignore files say. Never sent, and nothing can change that: targon's own secrets,
 * its config directory (the API key, the project key, the VM records; the one a run uses and the default one) and
 * `~/.ssh` (of $HOME and of the password database's home). Each is known by its identity (device and inode), so that
 * it is held back wherever it lies inside the working directory, and by whatever name. Held back unless a
 * `.targonignore` lets it through on purpose (the last of its rules that matches is a negation, `!.env`): a file or
 * directory that looks like a private key or a credentials store.
 */
import {realpathSync, statSync} from 'node:fs'
import {homedir, userInfo} from 'node:os'
import {join, sep} from 'node:path'

import {usageError} from '../../core/errors.js'

/** Why something is not sent: targon's own secrets, a name that looks secret, or what a sync cannot send. */
export const HELD_BACK_KINDS = ['config-directory', 'ssh-directory', 'looks-secret', 'link', 'not-regular', 'bad-name'] as const
export type HeldBackKind = (typeof HELD_BACK_KINDS)[number]

export interface HeldBack {
  /** Relative to the synced directory, as a warning shows it. */
  path: string
  kind: HeldBackKind
  /** One line that says why, and for a name that looks secret how to send it. */
  reason: string
}

/** A directory whose contents never go: found by its identity during the walk. */
export interface NeverSentDir {
  kind: 'config-directory' | 'ssh-directory'
  /** Its real path (links resolved). */
  path: string
  dev: number
  ino: number
}

const NEVER_SENT_REASON: Record<NeverSentDir['kind'], string> = {
  'config-directory': "targon's config directory (the API key, the project key, the VM records): never sent",
  'ssh-directory': '~/.ssh (SSH keys): never sent',
}

/** The directories that exist among the config directories given and the `.ssh` of this user's homes. */
export function neverSentDirs(configDirs: readonly string[]): NeverSentDir[] {
  const candidates = [
    ...configDirs.map((path) => ({kind: 'config-directory' as const, path})),
    ...homeDirs().map((home) => ({kind: 'ssh-directory' as const, path: join(home, '.ssh')})),
  ]
  const dirs: NeverSentDir[] = []
  for (const {kind, path} of candidates) {
    const info = statSync(path, {throwIfNoEntry: false})
    if (!info?.isDirectory()) continue
    dirs.push({dev: info.dev, ino: info.ino, kind, path: realpathSync(path)})
  }

  return dirs
}

/** $HOME and the password database's home of this user, where they are set. */
export function homeDirs(): string[] {
  let database = ''
  try {
    database = userInfo().homedir
  } catch {
    // No entry in the password database (some containers): $HOME alone.
  }
  return [...new Set([homedir(), database].filter((home) => home.startsWith('/')))]
}

/** Which of the directories never sent an entry is (by identity); null when it is none of them. */
export function neverSentKind(dirs: readonly NeverSentDir[], info: {dev: number; ino: number}): NeverSentDir['kind'] | null {
  return dirs.find((dir) => dir.dev === info.dev && dir.ino === info.ino)?.kind ?? null
}

/** Why such a directory is held back, for its warning. */
export function neverSentText(kind: NeverSentDir['kind']): string {
  return NEVER_SENT_REASON[kind]
}

/**
 * Refuses (exit 2) a working directory that is one of the directories that are never sent, or lies inside one:
 * its files would all be the tool's secrets.
 */
export function refuseInsideNeverSent(localDir: string, dirs: readonly NeverSentDir[]): void {
  const real = realpathSync(localDir)
  const inside = dirs.find((dir) => real === dir.path || real.startsWith(dir.path.endsWith(sep) ? dir.path : `${dir.path}${sep}`))
  if (inside)
    throw usageError(
      `${localDir} ${real === inside.path ? 'is' : 'lies in'} ${inside.kind === 'ssh-directory' ? '~/.ssh' : "targon's config directory"} ${inside.path}, which a sync never sends`,
      "run from the project's directory, or name it with --workdir",
    )
}

/** Names that look like a private key or a credentials store; `parent` is the name of the entry's directory. */
const LOOKS_SECRET: {what: string; test: (name: string, parent: string) => boolean}[] = [
  {test: (name) => name.startsWith('id_') && !name.endsWith('.pub'), what: 'an SSH private key (id_*)'},
  {test: (name) => name.endsWith('.pem'), what: 'a private key or certificate (*.pem)'},
  {test: (name) => name === '.netrc', what: 'a credentials store (.netrc)'},
  {test: (name) => name === '.aws', what: 'AWS credentials (.aws/)'},
  {test: (name, parent) => name === 'config.json' && parent === '.docker', what: "Docker's registry credentials (.docker/config.json)"},
  {test: (name) => name === '.git-credentials', what: "git's stored credentials (.git-credentials)"},
  {test: (name) => name.startsWith('.env'), what: 'an environment file (.env*), which often holds secrets'},
]

/** Why the entry at `rel` (relative to the synced directory) looks secret; null when it does not. */
export function looksSecret(rel: string): string | null {
  const slash = rel.lastIndexOf('/')
  const name = rel.slice(slash + 1)
  const parent = slash < 0 ? '' : rel.slice(rel.lastIndexOf('/', slash - 1) + 1, slash)
  const match = LOOKS_SECRET.find((each) => each.test(name, parent))
  return match ? `looks like ${match.what}: held back; a .targonignore line !${rel} sends it` : null
}
