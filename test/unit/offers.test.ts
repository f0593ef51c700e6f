import {describe, expect, it} from 'vitest'

import {RawOfferSchema} from '../../src/lib/adapters/targon/schemas.js'
import {filterOffers} from '../../src/lib/domain/offers/filter.js'
import {displayGpuModel, gpuKey, normalizeOffer, sortOffers, withinCap} from '../../src/lib/domain/offers/offers.js'
import {formatDuration, parseDuration, parsePrice} from '../../src/lib/core/input.js'

describe('GPU names', () => {
  it('matches the common spellings of one model', () => {
    const keys = ['rtx6000b', 'RTX-PRO-6000B', 'RTXPRO6000', 'RTX PRO 6000 Blackwell', 'NVIDIA-RTX-PRO-6000B'].map((name) => gpuKey(name))
    expect(new Set(keys)).toEqual(new Set(['rtx6000b']))
    expect(gpuKey('NVIDIA-H100 80GB')).toBe('h100')
    expect(gpuKey('h200')).not.toBe(gpuKey('h100'))
    expect(gpuKey('RTX 6000 Ada')).not.toBe('rtx6000b')
    // Plain rtx6000 is the Ada card; the Blackwell one is always "RTX PRO 6000".
    expect(new Set(['rtx6000', 'RTX 6000 Ada', 'NVIDIA RTX 6000 Ada Generation', 'RTX-6000-ADA'].map((name) => gpuKey(name)))).toEqual(
      new Set(['rtx6000ada']),
    )
    expect(gpuKey('NVIDIA RTX PRO 6000 Blackwell Server Edition')).toBe('rtx6000b')
    expect(gpuKey('RTX A6000')).not.toBe(gpuKey('rtx6000'))
  })

  it('strips vendor prefixes for display', () => {
    expect(displayGpuModel('NVIDIA-GeForce-RTX-4090')).toBe('RTX-4090')
    expect(displayGpuModel('NVIDIA-H200')).toBe('H200')
    expect(displayGpuModel('B200')).toBe('B200')
  })
})

describe('normalizeOffer', () => {
  it('prefers the newer spec names and falls back to the v2 ones', () => {
    const both = RawOfferSchema.parse({
      available: 1,
      cost_per_hour: 2,
      name: 'x',
      spec: {cpu_millicores: 8000, gpu_count: 2, gpu_model: 'H100', gpu_type: 'OLD', memory: 1, memory_mib: 2048, vcpu: 99},
    })
    expect(normalizeOffer(both)).toMatchObject({gpu_count: 2, gpu_memory_gb: 80, gpu_model: 'H100', memory_mib: 2048, vcpus: 8})
    const v2 = RawOfferSchema.parse({cost_per_hour: 1, gpu: true, name: 'y', spec: {gpu_type: 'H200', memory: 1000, storage: 0, vcpu: 12}})
    expect(normalizeOffer(v2, 0.5)).toMatchObject({
      available: null,
      disk_mib: null,
      gpu_count: null,
      gpu_model: 'H200',
      memory_mib: 1000,
      vcpus: 12,
      within_cap: false,
    })
    const cpu = RawOfferSchema.parse({cost_per_hour: 0.1, gpu: false, name: 'cpu-small'})
    expect(normalizeOffer(cpu)).toMatchObject({gpu_count: 0, gpu_model: null})
  })

  it('filters and sorts, keeping unknown availability', () => {
    const offers = [
      {available: 0, cost_per_hour: 1, name: 'sold-out', spec: {gpu_count: 1, gpu_model: 'H100'}},
      {cost_per_hour: 3, name: 'unknown', spec: {gpu_count: 8, gpu_model: 'H100'}},
      {available: 2, cost_per_hour: 2, name: 'cheap', spec: {gpu_count: 1, gpu_model: 'H100'}},
    ].map((raw) => normalizeOffer(RawOfferSchema.parse(raw)))
    expect(sortOffers(filterOffers(offers, {})).map((offer) => offer.resource)).toEqual(['cheap', 'unknown'])
    expect(filterOffers(offers, {includeSoldOut: true, maxPrice: 2}).map((offer) => offer.resource)).toEqual(['sold-out', 'cheap'])
    expect(filterOffers(offers, {minGpus: 2}).map((offer) => offer.resource)).toEqual(['unknown'])
    expect(sortOffers(offers, 'available')[0]?.resource).toBe('cheap')
  })
})

describe('value parsers', () => {
  it('parses prices and compares them in micro-dollars, cap inclusive', () => {
    expect(parsePrice('1.8')).toBe(1.8)
    expect(parsePrice('$2')).toBe(2)
    for (const bad of ['abc', '-1', '0', '', '1e3', 'Infinity', '1.2.3']) expect(() => parsePrice(bad), bad).toThrow(/is not a price/)
    expect(withinCap(0.1 + 0.2, 0.3)).toBe(true)
    expect(withinCap(1.800001, 1.8)).toBe(false)
  })

  it('parses durations', () => {
    expect(parseDuration('90s', '--ttl')).toBe(90_000)
    expect(parseDuration('1h30m', '--ttl')).toBe(5_400_000)
    expect(parseDuration('6h', '--older-than')).toBe(21_600_000)
    expect(parseDuration('2d', '--ttl')).toBe(172_800_000)
    expect(parseDuration('45s', '--timeout')).toBe(45_000)
    expect(parseDuration('365d', '--ttl')).toBe(365 * 86_400_000)
    for (const bad of ['', 'h', '-5m', '5 weeks', '1y', '10ms', '1.5ms'])
      expect(() => parseDuration(bad, '--ttl'), bad).toThrow(/is not a duration/)
    for (const bare of ['0', '90', '1.5']) expect(() => parseDuration(bare, '--timeout'), bare).toThrow(/has no unit/)
  })

  it("states each duration flag's range when a value is outside it", () => {
    const hint = (input: string, flag: '--older-than' | '--timeout' | '--ttl') => {
      try {
        parseDuration(input, flag)
      } catch (error) {
        return `${(error as Error).message}. ${(error as {hint?: string}).hint}`
      }

      throw new Error(`${flag} ${input} was accepted`)
    }

    expect(hint('0s', '--ttl')).toMatch(/--ttl "0s" is out of range\. use from 1m to 365d/)
    expect(hint('30s', '--ttl')).toContain('from 1m to 365d')
    expect(hint('59s', '--older-than')).toContain('from 1m to 365d')
    expect(hint('0.5s', '--timeout')).toContain('from 1s to 365d')
    expect(hint('1000d', '--timeout')).toContain('out of range')
    expect(hint('366d', '--ttl')).toContain('to 365d')
    expect(formatDuration(3_723_000)).toBe('1h2m')
    expect(formatDuration(59_000)).toBe('59s')
    expect(formatDuration(3 * 86_400_000)).toBe('3d')
  })
})
