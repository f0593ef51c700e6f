/**
 * The team guards' keys that up adds to every VM it creates, so that the org's team guard (guard install --team, on an
 * always-on machine) can log in to it and enforce the limits it carries. Found by name in the org's key listing, read
 * once per run. The lookup is optional: a listing that fails leaves the VMs without them, with a warning, and never
 * stops a rent.
 */
import * as z from 'zod'

import type {TargonClient} from '../targon/client.js'
import {isGuardKeyName, keyBlob} from './project-key.js'
import {asTargonError} from '../../core/errors.js'

export const GuardKeySchema = z
  .object({
    uid: z.string().describe('its uid in the org'),
    name: z.string().describe('its name in the org: targon-guard- and 8 hex digits, by which up finds it'),
  })
  .describe("a team guard's SSH key registered with the org")
export type GuardKey = z.infer<typeof GuardKeySchema>

/** At most this many team guards' keys go on a VM: a listing full of them is not a reason for a VM full of them. */
export const MAX_GUARD_KEYS = 8

/** A team guard's key is ed25519 (see project-key.ts); anything else under its name is not one. */
const ED25519_BLOB = /^ssh-ed25519 [A-Za-z0-9+/]{1,200}={0,2}$/

/** The org's team guards' keys, in the order of the listing: a name of theirs and an ed25519 public key. */
export async function listGuardKeys(client: TargonClient, org: string): Promise<GuardKey[]> {
  return (await client.listSshKeys(org)).flatMap((key) =>
    key.name && isGuardKeyName(key.name) && ED25519_BLOB.test(keyBlob(key.public_key_raw)) ? [{name: key.name, uid: key.uid}] : [],
  )
}

/** The keys up adds to the VMs it creates: at most MAX_GUARD_KEYS; none, with a warning, when the listing fails. */
export async function teamGuardKeys(client: TargonClient, org: string, warn: (message: string) => void): Promise<GuardKey[]> {
  let keys: GuardKey[]
  try {
    keys = await listGuardKeys(client, org)
  } catch (error) {
    warn(
      `the org's SSH keys could not be listed (${asTargonError(error).message}): the VMs this run makes carry no team guard's key, so no team guard covers them`,
    )
    return []
  }

  if (keys.length > MAX_GUARD_KEYS)
    warn(
      `the org has ${keys.length} team guard keys: the VMs this run makes carry the first ${MAX_GUARD_KEYS} (${keys
        .slice(0, MAX_GUARD_KEYS)
        .map((key) => key.name)
        .join(', ')}); remove the keys of team guards that no longer run`,
    )
  return keys.slice(0, MAX_GUARD_KEYS)
}
