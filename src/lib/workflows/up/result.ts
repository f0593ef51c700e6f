/** The JSON result of one VM of `targon up`, from its latest stage, its claim and its local record. */
import {PHASES} from '../../adapters/events/schema.js'
import type {VmResult} from './schema.js'
import type {Provisioning} from './provisioning.js'
import type {VmTrack} from './stages.js'

export function vmResult(ctx: Provisioning, track: VmTrack): VmResult {
  const {claim, stage} = track
  const record = claim ? ctx.state.readVm(ctx.request.org, claim.name) : undefined
  const bootstrapped = stage?.kind === 'bootstrapped' || stage?.kind === 'ready' ? stage : undefined
  const marker = bootstrapped?.marker
  const endpoint = stage && 'endpoint' in stage ? stage.endpoint : undefined
  return {
    adopted: claim?.origin === 'adopted',
    bootstrap: marker
      ? {
          docker_version: marker.docker?.version ?? null,
          driver_version: marker.driver_version ?? null,
          gpus: {count: marker.gpus?.count ?? null, name: marker.gpus?.name ?? null},
          gpu_check: marker.gpu_check === 'container' || marker.gpu_check === 'runtime' ? marker.gpu_check : null,
          nvidia_ctk_version: marker.nvidia_ctk_version ?? null,
          script_version: marker.script_version ?? null,
        }
      : null,
    created_at: stage?.createdAt ?? record?.created_at ?? null,
    dstack:
      stage?.kind === 'ready'
        ? {
            dstack_sign: stage.dstackManaged,
            healthy: true,
            managed_by: stage.dstackManaged === null ? 'targon' : 'dstack-managed',
            shim_version: stage.shimVersion,
          }
        : null,
    fleet: ctx.request.fleet,
    gpu_count: stage?.gpu.count ?? null,
    gpu_model: stage?.gpu.model ?? null,
    host_key_fingerprint: bootstrapped?.hostKey.fingerprint ?? record?.host_key?.fingerprint ?? null,
    identity_file: ctx.request.identityFile,
    max_cost_usd: record?.max_cost_usd ?? null,
    max_price: ctx.request.maxPrice,
    name: claim?.name ?? '',
    // In the order of the chain, whichever ended first (wait-running may end after install).
    phases: [...track.phases].sort((a, b) => PHASES.indexOf(a.name) - PHASES.indexOf(b.name)),
    price_per_hour: stage?.price ?? 0,
    public_ip: endpoint?.host ?? null,
    resource: stage?.resource ?? '',
    ssh_port: endpoint?.port ?? null,
    status: claim?.status ?? 'unknown',
    ttl_expires_at: record?.ttl_expires_at ?? null,
    uid: claim?.uid ?? '',
    user: 'ubuntu',
  }
}
