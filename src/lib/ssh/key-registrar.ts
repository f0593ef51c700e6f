/**
 * Registers the project key with an org once: its uid is cached locally and verified with one
 * GET; otherwise the org's keys are searched by key blob before anything is created, under a lock
 * so that concurrent first runs register one key.
 */
import {TargonError} from '../shell/errors.js'
import type {LocalState} from '../state/local-state.js'
import {withFileLock} from '../state/lock.js'
import type {TargonClient} from '../targon/client.js'
import {type ProjectKey, keyName, sameKey} from './project-key.js'

/** Makes sure the org knows our key and returns its uid. */
export async function ensureKeyRegistered(client: TargonClient, org: string, state: LocalState, key: ProjectKey): Promise<string> {
  const verified = async (uid: string | undefined): Promise<string | undefined> => {
    if (!uid) return undefined
    try {
      const remote = await client.getSshKey(org, uid)
      return sameKey(remote.public_key_raw, key.publicKey) ? uid : undefined
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') return undefined
      throw error
    }
  }

  const cached = state.readOrgCache(org).ssh_key_uid
  const fromCache = await verified(cached)
  if (fromCache) return fromCache

  return withFileLock(`${state.orgFile(org)}.lock`, async () => {
    const cachedNow = state.readOrgCache(org).ssh_key_uid
    if (cachedNow && cachedNow !== cached) {
      const fromOtherProcess = await verified(cachedNow)
      if (fromOtherProcess) return fromOtherProcess
    }

    const existing = (await client.listSshKeys(org)).find((remote) => sameKey(remote.public_key_raw, key.publicKey))
    const uid = existing?.uid ?? (await client.createSshKey(org, {name: keyName(key.publicKey), ssh_key: key.publicKey})).uid
    state.writeOrgCache(org, {...state.readOrgCache(org), ssh_key_uid: uid})
    return uid
  })
}
