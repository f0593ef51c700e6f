/** up --dstack: once the VMs are ready, dstack's fleet targon-<fleet> is synced (as targon dstack sync) to take them. */
import type {TargonClient} from '../../adapters/targon/client.js'
import {asTargonError} from '../../core/errors.js'
import {openDstack} from '../dstack/open.js'
import {runDstackSync} from '../dstack/sync.js'
import type {DstackSyncResult} from '../dstack/schema.js'
import type {RunContext} from '../run-context.js'

/** What the sync reads of the run, and where its summary line goes. */
export type DstackAddRun = Pick<RunContext, 'clock' | 'historyBudget' | 'localState' | 'settings' | 'signal' | 'warn'> & {
  info: (line: string) => void
}

/**
 * The fleet's ready VMs go into dstack's fleet, and the sync's result is returned; any failure is a warning (null),
 * and the VMs stay.
 */
export async function addToDstack(
  run: DstackAddRun,
  client: TargonClient,
  where: {org: string; fleet: string; owner: string | null; trace?: (line: string) => void},
): Promise<DstackSyncResult | null> {
  const {fleet, org, owner} = where
  try {
    const dstack = await openDstack(run, {trace: where.trace})
    if (dstack === null) {
      run.warn('--dstack: no dstack server is configured (dstack-url, dstack-project, dstack-token); the VMs were not added')
      return null
    }

    try {
      const synced = await runDstackSync(run, client, run.localState(), dstack, {
        configDir: run.settings.dir,
        fleet,
        org,
        owners: {anyOwner: false, owner},
      })
      run.info(`dstack fleet ${synced.dstack_fleet}: ${synced.added.length} added, ${synced.unchanged.length} unchanged`)
      return synced
    } finally {
      await dstack.client.close()
    }
  } catch (error) {
    run.warn(
      `--dstack: the VMs were not added to dstack (${asTargonError(error).message}); they stay: targon dstack sync --fleet ${fleet} adds them`,
    )
    return null
  }
}
