/**
 * What happens to a VM whose run failed or was interrupted (--on-failure): `auto` deletes what
 * this run created and keeps what it adopted, `delete` deletes both, `keep` deletes nothing.
 * Deletion follows the workload until it no longer bills (deletion/), on the clean-up client,
 * which neither Ctrl-C nor --timeout stops.
 */
import type {DeleteResult} from '../../domain/deletion/schema.js'
import type {OnFailure} from './schema.js'
import {type Provisioning, deleteClaim} from './provisioning.js'
import type {Claim, VmTrack} from './stages.js'

export interface Rollback {
  attempted: boolean
  results: DeleteResult[]
}

export async function rollBack(ctx: Provisioning, track: VmTrack): Promise<Rollback> {
  track.closeSsh()
  const {claim} = track
  if (!claim || !deletes(ctx.request.onFailure, claim)) return {attempted: false, results: []}
  return {attempted: true, results: (await deleteClaim(ctx, claim, track.stage?.resource ?? null)).results}
}

function deletes(onFailure: OnFailure, claim: Claim): boolean {
  return onFailure === 'delete' || (onFailure === 'auto' && claim.origin === 'created')
}

/** What a failed run left running on purpose (--on-failure keep, or an adopted VM under auto), and how to delete it. */
export function keptNote(kept: Claim[], onFailure: OnFailure): string | undefined {
  if (kept.length === 0) return undefined
  const names = kept.map((claim) => `${claim.name} (${claim.uid})`).join(', ')
  const uids = kept.map((claim) => claim.uid).join(' ')
  const why = onFailure === 'keep' ? '--on-failure keep' : 'adopted, and --on-failure auto deletes only what this run created'
  const billing = kept.some((claim) => claim.status !== 'registered') ? 'still billing' : 'registered, not yet billing'
  return `kept ${names} (${why}), ${billing}: delete with targon down ${uids}`
}
