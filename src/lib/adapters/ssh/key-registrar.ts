/**
 * Registers the project key with an org once: its uid is cached locally and verified with one
 * GET; otherwise the org's keys are searched by key blob before anything is created, under a lock
 * so that concurrent first runs register one key.
 */
import {TargonError} from '../../core/errors.js'
import type {LocalState} from '../state/local-state.js'
import {withFileLock} from '../state/lock.js'
import type {TargonClient} from '../targon/client.js'
import {apiTrouble, isOutcomeUnknown} from '../../core/wait.js'
import {BACKOFF} from '../../core/backoff.js'
import {type Clock, REAL_CLOCK} from '../../core/clock.js'
import {reconcile} from '../../core/reconcile.js'
import {type ProjectKey, keyName, sameKey} from './project-key.js'

const REGISTER_MS = 2 * 60_000

/**
 * The key's uid in the org: found by its blob, else registered. An unclear answer (a 5xx, a reset: the key may well
 * be registered) is reconciled by listing the keys again and matching the blob; only when it is not there is it sent
 * again, a bounded number of times, with a back-off.
 */
async function registerReconciled(client: TargonClient, org: string, key: ProjectKey, clock: Clock): Promise<string> {
  const outcome = await reconcile(
    {
      classify: (error) => (isOutcomeUnknown(error) ? 'unclear' : 'fatal'),
      look: async () => {
        const existing = (await client.listSshKeys(org)).find((remote) => sameKey(remote.public_key_raw, key.publicKey))
        return existing ? {observed: existing.uid} : 'watch'
      },
      lookDelay: BACKOFF.keyLook,
      lookTrouble: apiTrouble,
      send: async () => (await client.createSshKey(org, {name: keyName(key.publicKey, key.role), ssh_key: key.publicKey})).uid,
      watchMs: (_error, sends) => BACKOFF.keyLook(sends - 1),
    },
    {clock, deadline: clock.now() + REGISTER_MS, lookFirst: true},
  )
  if (outcome.kind === 'answered') return outcome.value
  if (outcome.kind === 'observed') return outcome.state
  if (outcome.kind === 'refused') throw outcome.error
  if (outcome.why === 'deadline')
    throw new TargonError(
      'TIMEOUT',
      `registering the ${key.role === 'guard' ? "team guard's" : 'project'} key with org ${org} did not settle in time`,
      {hint: 'retry later'},
    )
  throw new TargonError(
    'API_ERROR',
    `the ${key.role === 'guard' ? "team guard's" : 'project'} key could not be registered with org ${org}`,
    {hint: 'retry later'},
  )
}

/** Where the org cache keeps the uid of a key of each role. */
const CACHE_FIELD = {guard: 'guard_key_uid', project: 'ssh_key_uid'} as const

/** Makes sure the org knows the key (the project key, or the team guard's) and returns its uid. */
export async function ensureKeyRegistered(
  client: TargonClient,
  org: string,
  state: LocalState,
  key: ProjectKey,
  clock: Clock = REAL_CLOCK,
): Promise<string> {
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

  const field = CACHE_FIELD[key.role]
  const cached = state.readOrgCache(org)[field]
  const fromCache = await verified(cached)
  if (fromCache) return fromCache

  return withFileLock(`${state.orgFile(org)}.lock`, async () => {
    const cachedNow = state.readOrgCache(org)[field]
    if (cachedNow && cachedNow !== cached) {
      const fromOtherProcess = await verified(cachedNow)
      if (fromOtherProcess) return fromOtherProcess
    }

    const uid = await registerReconciled(client, org, key, clock)
    state.writeOrgCache(org, {...state.readOrgCache(org), [field]: uid})
    return uid
  })
}

/**
 * Removes the key from the org (every registration of its blob; one already gone is fine) and forgets its cached uid.
 * The key files stay: a later registration of the same key makes the VMs that carry it reachable again.
 */
export async function unregisterKey(client: TargonClient, org: string, state: LocalState, key: ProjectKey): Promise<string[]> {
  const registered = (await client.listSshKeys(org)).filter((remote) => sameKey(remote.public_key_raw, key.publicKey))
  for (const remote of registered) {
    try {
      await client.deleteSshKey(org, remote.uid)
    } catch (error) {
      if (error instanceof TargonError && error.code === 'NOT_FOUND') continue
      // An unclear answer may have been applied: the listing tells.
      const stillThere = isOutcomeUnknown(error) && (await client.listSshKeys(org)).some((each) => each.uid === remote.uid)
      if (!isOutcomeUnknown(error) || stillThere) throw error
    }
  }
  const cache = state.readOrgCache(org)
  delete cache[CACHE_FIELD[key.role]]
  state.writeOrgCache(org, cache)
  return registered.map((remote) => remote.uid)
}
