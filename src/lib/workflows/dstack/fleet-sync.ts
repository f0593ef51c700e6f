/**
 * Makes a dstack SSH fleet hold exactly the given hosts, through dstack's plan/apply handshake: get_plan, then
 * delete_instances for hosts no longer wanted, then apply with the plan's current resource (twice when a kept host's
 * port changed: out, then in). A fleet being processed is retried, a plan overtaken by a change is made again, both
 * a bounded number of times on the run's clock. Hosts with a dstack job are never removed.
 */
import {type DstackClient, refusalOf} from '../../adapters/dstack/client.js'
import type {DstackFleet, DstackHost} from '../../adapters/dstack/schemas.js'
import type {Clock} from '../../core/clock.js'
import {TargonError} from '../../core/errors.js'
import {planChanges} from './plan.js'

/** Retries of one sync in all (busy fleet, or a plan overtaken), each after 1 s, 2 s, 4 s, … at most 15 s. */
export const MAX_SYNC_RETRIES = 6
const retryDelay = (retry: number) => Math.min(15_000, 1000 * 2 ** retry)

export interface SshKeyPair {
  public: string
  private: string
}

export interface FleetSyncOutcome {
  action: 'created' | 'unchanged' | 'updated'
  added: DstackHost[]
  removed: DstackHost[]
  unchanged: DstackHost[]
  /** Not wanted, but a dstack job runs on them: left in the fleet until it ends. */
  busy: DstackHost[]
  retries: number
}

/** The spec of a targon fleet: user ubuntu and the project key, one entry per host with its port. */
export function fleetSpec(name: string, key: SshKeyPair, hosts: DstackHost[]): unknown {
  return {
    configuration: {
      name,
      ssh_config: {
        hosts: hosts.map((host) => ({hostname: host.hostname, port: host.port})),
        ssh_key: {private: key.private, public: key.public},
        user: 'ubuntu',
      },
      type: 'fleet',
    },
    profile: {},
  }
}

/** Plans again after a plan was overtaken (each a retry); whatever else goes wrong is thrown. */
export async function syncFleet(
  dstack: DstackClient,
  name: string,
  key: SshKeyPair,
  wanted: DstackHost[],
  options: {clock: Clock; signal?: AbortSignal; info?: (line: string) => void},
): Promise<FleetSyncOutcome> {
  let retries = 0
  /** One request, sent again while dstack says the fleet is being processed. */
  const patiently = async <T>(send: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await send()
      } catch (error) {
        if (refusalOf(error) !== 'busy' || retries >= MAX_SYNC_RETRIES) throw error
        options.info?.(`dstack is processing fleet ${name}; trying again`)
        await options.clock.sleep(retryDelay(retries++), options.signal)
      }
    }
  }

  for (;;) {
    try {
      return {...(await syncOnce(dstack, name, key, wanted, patiently)), retries}
    } catch (error) {
      if (refusalOf(error) !== 'changed' || retries >= MAX_SYNC_RETRIES) throw asSyncError(error, name)
      options.info?.(`fleet ${name} changed in dstack since the plan; planning again`)
      await options.clock.sleep(retryDelay(retries++), options.signal)
    }
  }
}

async function syncOnce(
  dstack: DstackClient,
  name: string,
  key: SshKeyPair,
  wanted: DstackHost[],
  patiently: <T>(send: () => Promise<T>) => Promise<T>,
): Promise<Omit<FleetSyncOutcome, 'retries'>> {
  const spec = (hosts: DstackHost[]) => fleetSpec(name, key, hosts)
  const plan = await dstack.getPlan(spec(wanted))
  const current = plan.current_resource
  if (current === null) {
    // An empty fleet is not made: there is nothing for dstack to run on.
    if (wanted.length > 0) await patiently(() => dstack.apply(spec(wanted), null))
    return {action: wanted.length > 0 ? 'created' : 'unchanged', added: wanted, busy: [], removed: [], unchanged: []}
  }

  const changes = planChanges(wanted, current)
  if (changes.deleteNums.length > 0) await patiently(() => dstack.deleteInstances(name, changes.deleteNums))
  let fleet: DstackFleet = current
  if (changes.interim) {
    const interim = changes.interim
    fleet = await patiently(() => dstack.apply(spec(interim), fleet))
  }

  if (changes.final) {
    const final = changes.final
    await patiently(() => dstack.apply(spec(final), fleet))
  }

  const changed = changes.final !== null || changes.deleteNums.length > 0
  return {
    action: changed ? 'updated' : 'unchanged',
    added: [...changes.added, ...changes.readded],
    busy: changes.busy,
    removed: changes.removed,
    unchanged: changes.unchanged,
  }
}

function asSyncError(error: unknown, name: string): unknown {
  if (!(error instanceof TargonError)) return error
  const refusal = refusalOf(error)
  if (refusal === 'busy' || refusal === 'changed')
    return error.with({
      hint: `dstack kept processing or changing fleet ${name} through ${MAX_SYNC_RETRIES} retries: run targon dstack sync again in a minute`,
    })
  return error
}
