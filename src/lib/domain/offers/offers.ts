/**
 * VM offers: normalization of both inventory generations, GPU model names and ordering. Shared by `targon offers`
 * and the offer choice of `targon up`; which offers are kept is the offer filter's (filter.ts).
 */

import type {RawOffer} from '../../adapters/targon/schemas.js'
import type {Offer} from './schema.js'

export const OFFER_SORTS = ['price', 'gpu', 'available'] as const
export type OfferSort = (typeof OFFER_SORTS)[number]

interface GpuFamily {
  key: string
  label: string
  /** Per GPU, in GB as the vendor states it. */
  memoryGb: number
  aliases: string[]
}

/** Known GPU models; keys are canonical match keys (see gpuKey). */
const GPU_FAMILIES: GpuFamily[] = [
  {aliases: [], key: 'rtx6000b', label: 'RTX PRO 6000 Blackwell', memoryGb: 96},
  // Plain "RTX 6000" is the Ada card; the Blackwell one is always "RTX PRO 6000".
  {aliases: ['rtx6000'], key: 'rtx6000ada', label: 'RTX 6000 Ada', memoryGb: 48},
  {aliases: [], key: 'h100', label: 'H100', memoryGb: 80},
  {aliases: [], key: 'h200', label: 'H200', memoryGb: 141},
  {aliases: [], key: 'b200', label: 'B200', memoryGb: 180},
  {aliases: [], key: 'b300', label: 'B300', memoryGb: 288},
  {aliases: [], key: 'a100', label: 'A100', memoryGb: 80},
  {aliases: [], key: 'l40s', label: 'L40S', memoryGb: 48},
  {aliases: [], key: 'rtx4090', label: 'RTX 4090', memoryGb: 24},
  {aliases: [], key: 'rtx5090', label: 'RTX 5090', memoryGb: 32},
]

/** Strips vendor prefixes for display: NVIDIA-GeForce-RTX-4090 → RTX-4090. */
export function displayGpuModel(model: string): string {
  return model.replace(/^nvidia[-_ ]geforce[-_ ]/i, '').replace(/^nvidia[-_ ]/i, '')
}

/**
 * A canonical key for matching GPU names whatever their spelling:
 * rtx6000b, RTX-PRO-6000B, RTXPRO6000 and "RTX PRO 6000 Blackwell" all give rtx6000b; rtx6000 and
 * "RTX 6000 Ada Generation" give rtx6000ada.
 */
export function gpuKey(model: string): string {
  const key = displayGpuModel(model.trim())
    .toLowerCase()
    .replace(/[-_ ]\d+ ?gb$/, '')
    .replace(/[^a-z0-9]/g, '')
    .replace(/^(nvidia)?(geforce)?/, '')
    // "RTX PRO" names only the Blackwell generation, whatever edition follows.
    .replace(/^rtxpro(\d+).*$/, 'rtx$1b')
    .replace(/blackwell(serveredition)?$/, 'b')
    .replace(/adageneration$/, 'ada')
  const family = GPU_FAMILIES.find((candidate) => candidate.key === key || candidate.aliases.includes(key))
  return family?.key ?? key
}

export function gpuMemoryGb(model: string | null): number | null {
  if (!model) return null
  const key = gpuKey(model)
  return GPU_FAMILIES.find((family) => family.key === key)?.memoryGb ?? null
}

export function normalizeOffer(raw: RawOffer, maxPrice?: number): Offer {
  const spec = raw.spec ?? {}
  const rawModel = spec.gpu_model ?? spec.gpu_type ?? null
  const gpuModel = rawModel ? displayGpuModel(rawModel) : null
  const millicores = spec.cpu_millicores
  const gpuCount = spec.gpu_count ?? (raw.gpu === false ? 0 : null)
  return {
    available: raw.available ?? null,
    disk_mib: positiveOrNull(spec.disk_size_mib ?? spec.storage),
    display_name: raw.display_name ?? null,
    gpu_count: gpuCount,
    gpu_memory_gb: gpuMemoryGb(gpuModel),
    gpu_model: gpuModel,
    memory_mib: positiveOrNull(spec.memory_mib ?? spec.memory),
    price_per_hour: raw.cost_per_hour,
    resource: raw.name,
    vcpus: typeof millicores === 'number' ? millicores / 1000 : (spec.vcpu ?? null),
    within_cap: maxPrice === undefined ? null : withinCap(raw.cost_per_hour, maxPrice),
  }
}

function positiveOrNull(value: number | null | undefined): number | null {
  return typeof value === 'number' && value > 0 ? value : null
}

export function sortOffers(offers: Offer[], by: OfferSort = 'price'): Offer[] {
  const byPrice = (a: Offer, b: Offer) => a.price_per_hour - b.price_per_hour || a.resource.localeCompare(b.resource)
  const compare: Record<OfferSort, (a: Offer, b: Offer) => number> = {
    available: (a, b) => (b.available ?? -1) - (a.available ?? -1) || byPrice(a, b),
    gpu: (a, b) => (a.gpu_model ?? '').localeCompare(b.gpu_model ?? '') || (a.gpu_count ?? 0) - (b.gpu_count ?? 0) || byPrice(a, b),
    price: byPrice,
  }
  return [...offers].sort(compare[by])
}

/** The price cap is inclusive, compared in integer micro-dollars so that 0.1 + 0.2 is within a cap of 0.3. */
export function withinCap(price: number, cap: number): boolean {
  const micros = (usd: number) => Math.round(usd * 1_000_000)
  return micros(price) <= micros(cap)
}
