/** Seed data for the Targon simulator: SKUs, VM images, orgs and API keys. */

export interface OfferSeed {
  name: string
  display_name: string
  gpu: boolean
  gpu_model: string | null
  gpu_count: number
  vcpus: number
  memory_mib: number
  disk_mib: number
  cost_per_hour: number
  available: number
}

export interface OrgSeed {
  slug: string
  name: string
  org_type: 'PERSONAL' | 'TEAM'
  credits: number
}

/** The RTX PRO 6000 offer that most tests and the bench rent. */
const RTX_SMALL: OfferSeed = {
  available: 9,
  cost_per_hour: 1.69,
  disk_mib: 327_680,
  display_name: 'RTX PRO 6000 Blackwell - Small',
  gpu: true,
  gpu_count: 1,
  gpu_model: 'RTX-PRO-6000B',
  memory_mib: 128_000,
  name: 'rtx6000b-small',
  vcpus: 32,
}

/** The seed's RTX PRO 6000 offer alone, with room for `available` VMs: for fleets larger than the seed allows. */
export function fleetOffers(available: number): OfferSeed[] {
  return [{...RTX_SMALL, available}]
}

export const SEED_OFFERS: OfferSeed[] = [
  RTX_SMALL,
  {
    available: 4,
    cost_per_hour: 1.79,
    disk_mib: 327_680,
    display_name: 'RTX PRO 6000 Blackwell - Small (alt)',
    gpu: true,
    gpu_count: 1,
    gpu_model: 'RTX-PRO-6000B',
    memory_mib: 128_000,
    name: 'rtx6000b-small-b',
    vcpus: 32,
  },
  {
    available: 3,
    cost_per_hour: 6.76,
    disk_mib: 1_310_720,
    display_name: 'RTX PRO 6000 Blackwell - Large',
    gpu: true,
    gpu_count: 4,
    gpu_model: 'RTX-PRO-6000B',
    memory_mib: 512_000,
    name: 'rtx6000b-large',
    vcpus: 128,
  },
  {
    available: 5,
    cost_per_hour: 2.49,
    disk_mib: 0,
    display_name: 'NVIDIA H200 - Small',
    gpu: true,
    gpu_count: 1,
    gpu_model: 'NVIDIA-H200',
    memory_mib: 115_000,
    name: 'h200-small',
    vcpus: 12,
  },
  {
    available: 0,
    cost_per_hour: 19.92,
    disk_mib: 0,
    display_name: 'NVIDIA H200 - XLarge',
    gpu: true,
    gpu_count: 8,
    gpu_model: 'NVIDIA-H200',
    memory_mib: 920_000,
    name: 'h200-xlarge',
    vcpus: 96,
  },
  {
    available: 2,
    cost_per_hour: 0.59,
    disk_mib: 102_400,
    display_name: 'RTX 4090 - Small',
    gpu: true,
    gpu_count: 1,
    gpu_model: 'NVIDIA-GeForce-RTX-4090',
    memory_mib: 64_000,
    name: 'rtx4090-small',
    vcpus: 16,
  },
]

export const SEED_IMAGES = [
  {description: 'Ubuntu 24.04 LTS with NVIDIA driver 595', display_name: 'Ubuntu 24.04 LTS (NVIDIA 595)', name: 'ubuntu-24-04-lts-595'},
  {description: 'Ubuntu 22.04 LTS with NVIDIA driver 570', display_name: 'Ubuntu 22.04 LTS (NVIDIA 570)', name: 'ubuntu-22-04-lts-570'},
]

export const SEED_ORGS: OrgSeed[] = [
  {credits: 40, name: 'Acme', org_type: 'PERSONAL', slug: 'acme'},
  {credits: 500, name: 'Acme Research', org_type: 'TEAM', slug: 'acme-research'},
]

/** The default API key sees one org; the multi-org key sees both. */
export const SEED_TOKENS: Record<string, string[]> = {
  tgn_sim_multi_org_key: ['acme', 'acme-research'],
  // An org-scoped service token: it may use acme, but /orgs lists no org for it (it belongs to none).
  tgn_sim_service_key: ['acme'],
  // A team's key: its org alone.
  tgn_sim_team_key: ['acme-research'],
  tgn_sim_test_key: ['acme'],
}

export const DEFAULT_TOKEN = 'tgn_sim_test_key'

/** Tokens whose GET /orgs lists nothing (see tgn_sim_service_key). */
export const SERVICE_TOKENS = ['tgn_sim_service_key']
