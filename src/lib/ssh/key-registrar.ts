/**
 * Registers the project key with an org once: its uid is cached locally and verified with one
 * GET; otherwise the org's keys are searched by key blob before anything is created, under a lock
 * so that concurrent first runs register one key.
 */
import {TargonError} from '../core/errors.js'
import type {LocalState} from '../state/local-state.js'
import {withFileLock} from '../state/lock.js'
import type {TargonClient} from '../targon/client.js'
import {isOutcomeUnknown, pollUntil} from '../targon/wait.js'
import {type ProjectKey, keyName, sameKey} from './project-key.js'

const REGISTER_MS = 2 * 60_000

/** How many times the key is sent while the answers stay unclear and the org's keys do not show it. */
const REGISTER_SENDS = 4

/**
 * The key's uid in the org: found by its blob, else registered. An unclear answer (a 5xx, a reset: the key may well
 * be registered) is reconciled by listing the keys again and matching the blob; only when it is not there is it sent
 * again, at most REGISTER_SENDS times, with a back-off.
 */
async function registerReconciled(client: TargonClient, org: string, key: ProjectKey): Promise<string> {
  let sends = 0
  const uid = await pollUntil(
    async () => {
      const existing = (await client.listSshKeys(org)).find((remote) => sameKey(remote.public_key_raw, key.publicKey))
      if (existing) return existing.uid
      if (sends++ >= REGISTER_SENDS)
        throw new TargonError('API_ERROR', `the project key could not be registered with org ${org}`, {hint: 'retry later'})
      try {
        return (await client.createSshKey(org, {name: keyName(key.publicKey), ssh_key: key.publicKey})).uid
      } catch (error) {
        if (!isOutcomeUnknown(error)) throw error
        return undefined
      }
    },
    {deadline: Date.now() + REGISTER_MS, delayMs: (poll) => Math.min(8000, 500 * 2 ** poll)},
  )
  if (!uid) throw new TargonError('TIMEOUT', `registering the project key with org ${org} did not settle in time`, {hint: 'retry later'})
  return uid
}

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

    const uid = await registerReconciled(client, org, key)
    state.writeOrgCache(org, {...state.readOrgCache(org), ssh_key_uid: uid})
    return uid
  })
}
