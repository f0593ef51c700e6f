/**
 * What a guard for this config directory and profile would run, checked the way cron or systemd will run it: with
 * no environment. Everything the sweep needs must be in the config file (the key above all); values that only the
 * environment holds are refused or named, and a selection that the sweep would refuse is refused here.
 */
import {realpathSync} from 'node:fs'

import {TargonError, isTargonError} from '../../core/errors.js'
import type {RunContext} from '../run-context.js'
import {type SettingsResolver, parseStored} from '../../adapters/settings/resolve.js'
import {readStoredValue} from '../../adapters/settings/store.js'
import {ensureConfigDir} from '../../adapters/state/trust.js'
import {LocalState} from '../../adapters/state/local-state.js'
import {checkSweepSelection} from '../sweep/sweep.js'
import type {TargonClient} from '../../adapters/targon/client.js'
import {type GuardSpec, checkPlainPath} from './guard.js'

/** The directory and profile of a guard, and the paths it runs, before the API is asked anything. */
export async function localSpec(settings: SettingsResolver, everyMs: number): Promise<Omit<GuardSpec, 'org' | 'owner'>> {
  const dir = checkPlainPath(ensureConfigDir(settings.dir), 'config directory')
  const profile = (await settings.profile()).name
  // The CLI as this process was started (bin/run.js, or the npm link to it), resolved: a link may move.
  const cli = process.argv[1] === undefined ? '' : realpathSync(process.argv[1])
  return {cli: checkPlainPath(cli, 'CLI'), configDir: dir, everyMs, node: checkPlainPath(process.execPath, 'node'), profile}
}

/** Refuses (exit 3) what the guard's run would not have: a key, an owner or an org that only this environment gives. */
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
      labelFleet: await settings.get('fleet'),
      org,
      owners: {anyOwner: false, owner},
      reconcileMs: await settings.get('reconcile-window'),
    })
  } catch (error) {
    if (isTargonError(error) && error.code === 'USAGE')
      throw new TargonError('CONFIG', `the guard's sweep would be refused: ${error.message}`, {hint: error.hint})
    throw error
  }

  return owner
}
