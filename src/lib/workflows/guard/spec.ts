/**
 * What a guard for this config directory and profile would run, checked the way cron or systemd will run it: with
 * no environment. Everything the sweep needs must be in the config file (the key above all); values that only the
 * environment holds are refused or named, and a selection that the sweep would refuse is refused here.
 */
import {existsSync, realpathSync} from 'node:fs'
import {dirname, join} from 'node:path'

import {TargonError, isTargonError} from '../../core/errors.js'
import type {RunContext} from '../run-context.js'
import {type SettingsResolver, parseStored} from '../../adapters/settings/resolve.js'
import {readStoredValue} from '../../adapters/settings/store.js'
import {SETTINGS} from '../../adapters/settings/table.js'
import {type UnsafeFolder, changeableByOthers, ensureConfigDir, unsafeFolderAbove} from '../../adapters/state/trust.js'
import {LocalState} from '../../adapters/state/local-state.js'
import {checkSweepSelection} from '../sweep/sweep.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {ensureKeyRegistered, unregisterKey} from '../../adapters/ssh/key-registrar.js'
import {ensureProjectKey, hasGuardKey, keyName} from '../../adapters/ssh/project-key.js'
import type {Clock} from '../../core/clock.js'
import {type GuardSpec, checkPlainPath} from './guard.js'
import type {GuardKey} from '../../adapters/ssh/guard-keys.js'

/** The directory and profile of a guard, and the paths it runs, before the API is asked anything. */
export async function localSpec(settings: SettingsResolver, everyMs: number): Promise<Omit<GuardSpec, 'org' | 'owner' | 'team'>> {
  const dir = checkPlainPath(ensureConfigDir(settings.dir), 'config directory')
  const profile = (await settings.profile()).name
  // The CLI as this process was started (bin/run.js, or the npm link to it), and node, resolved: a link may move.
  const cli = checkPlainPath(process.argv[1] === undefined ? '' : realpathSync(process.argv[1]), 'CLI')
  const node = checkPlainPath(realpathSync(process.execPath), 'node')
  refuseChangeableCode(cli, node)
  return {cli, configDir: dir, everyMs, node, profile}
}

/**
 * Refuses (exit 3) a CLI or a node that another user could change: cron and systemd would run their code as this
 * user (root, often). Checked: node, the CLI's package folder with what it loads (bin/, dist/, node_modules/, its
 * package.json and manifest), and every folder above them (see unsafeFolderAbove).
 */
function refuseChangeableCode(cli: string, node: string): void {
  for (const [what, path, unsafe] of [
    ['node', node, unsafeFolderAbove(node) ?? changeableByOthers([node])],
    ['CLI', cli, changeablePackage(cli)],
  ] as const) {
    if (unsafe)
      throw new TargonError('CONFIG', `the guard would run ${path} (${what}), but ${unsafe.dir} ${unsafe.problem}`, {
        hint:
          unsafe.ownerUid === undefined
            ? `run: chmod go-w ${unsafe.dir}, or install targon and node where only you and root can write`
            : 'install targon and node where only you and root can write',
      })
  }
}

/** What another user could change of the CLI: its package folder (bin/run.js is in <package>/bin) and what it loads. */
function changeablePackage(cli: string): UnsafeFolder | undefined {
  const pkg = dirname(dirname(cli))
  if (!existsSync(join(pkg, 'package.json'))) return unsafeFolderAbove(cli) ?? changeableByOthers([cli])
  const loaded = ['bin', 'dist', 'node_modules', 'package.json', 'oclif.manifest.json'].map((name) => join(pkg, name))
  return unsafeFolderAbove(pkg) ?? changeableByOthers([pkg], false) ?? changeableByOthers(loaded)
}

/**
 * Refuses (exit 3) what the guard's passes would not have: a key, an owner, an org or an API URL that only this
 * environment gives.
 */
export async function refuseEnvironmentOnly(
  settings: SettingsResolver,
  dir: string,
  profile: string,
  orgFlag: string | undefined,
): Promise<void> {
  if ((await readStoredValue('api-key', dir, profile)) === undefined)
    throw new TargonError('CONFIG', 'the API key is not in the config file: cron and systemd give the guard no environment', {
      hint: `store it for the guard: targon config set api-key${profile === 'default' ? '' : ` --profile ${profile}`}`,
    })
  const url = settings.fromEnvironment('api-url')
  if (url !== undefined) {
    // As the sweep reads it: the config file's, else the default; compared as origins (a trailing slash is no change).
    const stored = await readStoredValue('api-url', dir, profile)
    const guards =
      stored === undefined || stored === null || stored === '' ? SETTINGS['api-url'].default : parseStored<string>('api-url', stored, dir)
    const given = SETTINGS['api-url'].parse(url, 'TARGON_API_URL')
    if (given !== guards)
      throw new TargonError(
        'CONFIG',
        `TARGON_API_URL gives the API URL ${given}, which the guard would not have (it would use ${guards})`,
        {
          hint: `store it for the guard: targon config set api-url ${given}${profile === 'default' ? '' : ` --profile ${profile}`}`,
        },
      )
  }

  for (const [key, variable, given] of [
    ['owner', 'TARGON_OWNER', settings.fromEnvironment('owner')],
    ['org', orgFlag === undefined ? 'TARGON_ORG' : '--org', orgFlag ?? settings.fromEnvironment('org')],
  ] as const) {
    if (!given) continue
    const stored = await readStoredValue(key, dir, profile)
    if (stored !== given)
      throw new TargonError(
        'CONFIG',
        `${variable} gives the ${key} ${given}, which the guard would not have (the config file says ${typeof stored === 'string' ? stored : 'none'})`,
        {
          hint: `store it for the guard: targon config set ${key} ${given}${profile === 'default' ? '' : ` --profile ${profile}`}`,
        },
      )
  }
}

/** Secrets a run reads from the environment that the guard would miss: named in a warning, never quoted. */
export async function environmentOnlySecrets(settings: SettingsResolver, dir: string, profile: string): Promise<string[]> {
  const missing: string[] = []
  for (const [key, variable] of [
    ['notify-url', 'TARGON_NOTIFY_URL'],
    ['heartbeat-url', 'TARGON_HEARTBEAT_URL'],
  ] as const) {
    if (settings.fromEnvironment(key) !== undefined && (await readStoredValue(key, dir, profile)) === undefined)
      missing.push(`${variable} is set here but not in the config file: the guard will not see it (targon config set ${key})`)
  }

  return missing
}

/**
 * The owner the guard sweeps for (the config file's), and a dry run of its selection: a refusal (VMs of several
 * owners and no owner set) becomes exit 3 here rather than a guard that fails every few minutes.
 */
export async function checkSelection(client: TargonClient, run: RunContext, org: string, profile: string): Promise<string | null> {
  const {settings} = run
  // Checked as the sweep will read it: the owner goes into the marker of a crontab line or a unit.
  const stored = await readStoredValue('owner', settings.dir, profile)
  const owner = stored === undefined || stored === null || stored === '' ? null : parseStored<string>('owner', stored, settings.dir)
  try {
    await checkSweepSelection(run, client, new LocalState(settings.dir), {
      configDir: settings.dir,
      connectMs: await run.sshConnectMs(),
      labelFleet: await settings.get('fleet'),
      org,
      owners: {anyOwner: false, owner},
      reconcileMs: await settings.get('reconcile-window'),
    })
  } catch (error) {
    // The sweep's hint names its own flags (--any-owner), which the guard's entry never passes: the fix is the owner.
    if (isTargonError(error) && error.code === 'USAGE')
      throw new TargonError('CONFIG', `the guard's sweep would be refused: ${error.message}`, {
        hint: `set the owner whose VMs the guard sweeps: targon config set owner NAME${profile === 'default' ? '' : ` --profile ${profile}`}`,
      })
    throw error
  }

  return owner
}

/**
 * The team guard's key, generated in this directory once and registered with the org once (race-safe and reconciled,
 * as the project key is): from then on every up in the org adds it to the VMs it makes.
 */
export async function registerTeamGuardKey(client: TargonClient, configDir: string, org: string, clock: Clock): Promise<GuardKey> {
  const key = await ensureProjectKey(configDir, 'guard')
  const uid = await ensureKeyRegistered(client, org, new LocalState(configDir), key, clock)
  return {name: keyName(key.publicKey, 'guard'), uid}
}

/**
 * Removes the team guard's key from the org (guard uninstall of a team guard): from then on no up adds it, and no VM
 * is counted as covered by a guard that no longer runs. The key stays in this directory, so that installing the team
 * guard here again makes the VMs that carry it reachable again. Null when this directory has no team guard's key.
 */
export async function retireTeamGuardKey(client: TargonClient, configDir: string, org: string): Promise<GuardKey | null> {
  if (!hasGuardKey(configDir)) return null
  const key = await ensureProjectKey(configDir, 'guard')
  const removed = await unregisterKey(client, org, new LocalState(configDir), key)
  return removed.length === 0 ? null : {name: keyName(key.publicKey, 'guard'), uid: removed[0] as string}
}
