import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {describe, expect, it} from 'vitest'

import {parseJson} from '../helpers/cli.js'
import {useFreshFixture} from '../helpers/fixture.js'
import {REAL_CLOCK} from '../../src/lib/core/clock.js'
import {SEED_OFFERS} from '../simulator/seed.js'

// No API key at all: the inventory is public.
const fresh = useFreshFixture({env: {TARGON_API_KEY: undefined}, inProcess: true})
const {targon} = fresh
/** An origin where nothing listens. */
const NOWHERE = {env: {TARGON_API_URL: 'http://127.0.0.1:9'}}

describe('targon offers', () => {
  for (const variant of ['a', 'b', 'both'] as const) {
    it(`lists available offers cheapest first with inventory spec variant ${variant}, without an API key`, async () => {
      await fresh.setup({extraFields: true, inventoryVariant: variant})
      const result = await targon(['offers', '--json'])
      expect(result.code).toBe(0)
      expect(result.stderr).toBe('')
      const doc = parseJson(result)
      expect(doc).toMatchObject({command: 'offers', ok: true, schema_version: 1, warnings: []})
      const list = doc.data.offers as Record<string, unknown>[]
      expect(list.map((offer) => offer.resource)).toEqual([
        'rtx4090-small',
        'rtx6000b-small',
        'rtx6000b-small-b',
        'h200-small',
        'rtx6000b-large',
      ])
      expect(list[1]).toEqual({
        available: 9,
        disk_mib: 327_680,
        display_name: 'RTX PRO 6000 Blackwell - Small',
        gpu_count: 1,
        gpu_memory_gb: 96,
        gpu_model: 'RTX-PRO-6000B',
        memory_mib: 128_000,
        price_per_hour: 1.69,
        resource: 'rtx6000b-small',
        vcpus: 32,
        within_cap: null,
      })
      // Vendor prefixes are stripped and memory is known for common models.
      expect(list[0]).toMatchObject({gpu_memory_gb: 24, gpu_model: 'RTX-4090'})
      expect(list[3]).toMatchObject({disk_mib: null, gpu_memory_gb: 141, gpu_model: 'H200'})
    })
  }

  it('filters by GPU spelling, GPU count and price cap, and can include sold-out offers', async () => {
    await fresh.setup()
    for (const spelling of ['rtx6000b', 'RTX-PRO-6000B', 'RTXPRO6000', 'rtx pro 6000 blackwell']) {
      const doc = parseJson(await targon(['offers', '--gpu', spelling, '--json']))
      expect(
        doc.data.offers.map((offer: {resource: string}) => offer.resource),
        spelling,
      ).toEqual(['rtx6000b-small', 'rtx6000b-small-b', 'rtx6000b-large'])
    }

    const capped = parseJson(await targon(['offers', '--gpu', 'rtx6000b', '--max-price', '1.7', '--json']))
    expect(capped.data.offers).toHaveLength(1)
    expect(capped.data.offers[0]).toMatchObject({resource: 'rtx6000b-small', within_cap: true})
    expect(capped.data.filters).toEqual({gpu: 'rtx6000b', include_sold_out: false, max_price: 1.7, min_gpus: null, sort: 'price'})

    const many = parseJson(await targon(['offers', '--min-gpus', '4', '--all', '--json']))
    expect(many.data.offers.map((offer: {resource: string}) => offer.resource)).toEqual(['rtx6000b-large', 'h200-xlarge'])

    const byAvailable = parseJson(await targon(['offers', '--sort', 'available', '--json']))
    expect(byAvailable.data.offers[0].resource).toBe('rtx6000b-small')
  })

  it('--gpu rtx6000 is the RTX 6000 Ada, and memory per GPU is labelled GB', async () => {
    const ada = {
      available: 3,
      cost_per_hour: 0.99,
      disk_mib: 102_400,
      display_name: 'RTX 6000 Ada',
      gpu: true,
      gpu_count: 1,
      gpu_model: 'NVIDIA-RTX-6000-Ada-Generation',
      memory_mib: 64_000,
      name: 'rtx6000ada-small',
      vcpus: 16,
    }
    await fresh.setup({offers: [...SEED_OFFERS, ada]})
    const resources = async (gpu: string) =>
      parseJson(await targon(['offers', '--gpu', gpu, '--json'])).data.offers.map((offer: {resource: string}) => offer.resource)
    expect(await resources('rtx6000')).toEqual(['rtx6000ada-small'])
    expect(await resources('rtx6000b')).toEqual(['rtx6000b-small', 'rtx6000b-small-b', 'rtx6000b-large'])
    const table = (await targon(['offers'])).stdout.split('\n')
    expect(table[0]?.split('\t')[3]).toBe('GPU_GB')
    expect(table.find((line) => line.startsWith('rtx6000ada-small'))?.split('\t')[3]).toBe('48')
  })

  it('prints a table on stdout sorted by price, tab-separated when piped', async () => {
    await fresh.setup()
    const result = await targon(['offers'])
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toBe('RESOURCE\tGPU\tGPUS\tGPU_GB\tVCPU\tRAM_GIB\tDISK_GIB\tUSD_PER_H\tAVAILABLE')
    expect(lines[2]).toBe('rtx6000b-small\tRTX-PRO-6000B\t1\t96\t32\t125\t320\t1.69\t9')
    expect(lines).toHaveLength(6)
  })

  it('skips a malformed offer with a warning instead of failing the listing', async () => {
    await fresh.setup()
    fresh.sim.inject({
      body: JSON.stringify([
        {cost_per_hour: 'free', name: 'broken'},
        {available: 1, cost_per_hour: 1, name: 'cpu-small', spec: {vcpu: 4}},
      ]),
      path: '/tha/v3/inventory',
      status: 200,
    })
    const result = await targon(['offers', '--json'])
    expect(result.code).toBe(0)
    const doc = parseJson(result)
    expect(doc.data.offers.map((offer: {resource: string}) => offer.resource)).toEqual(['cpu-small'])
    expect(doc.warnings[0]).toContain('broken')
  })

  it('retries a 503 on the inventory and succeeds', async () => {
    await fresh.setup()
    fresh.sim.inject({path: '/tha/v3/inventory', status: 503, times: 2})
    const result = await targon(['offers', '--json'])
    expect(result.code).toBe(0)
    expect(fresh.sim.requests('GET', '/tha/v3/inventory')).toHaveLength(3)
  })

  describe('bad input exits 2 with one line, or the envelope under --json', () => {
    for (const args of [['--max-price', 'abc'], ['--min-gpus', '-1'], ['--bogus'], ['--sort', 'cheapest']]) {
      it(args.join(' '), async () => {
        await fresh.setup()
        const human = await targon(['offers', ...args], NOWHERE)
        expect(human.code).toBe(2)
        expect(human.stdout).toBe('')
        expect(human.stderr.trim().split('\n')).toHaveLength(1)
        expect(human.stderr).toMatch(/^Error: /)
        expect(human.stderr).not.toMatch(/\bat .*\.[jt]s:\d+/)

        const json = await targon(['offers', ...args, '--json'], NOWHERE)
        expect(json.code).toBe(2)
        const doc = parseJson(json)
        expect(doc).toMatchObject({command: 'offers', error: {code: 'USAGE', exit_code: 2}, ok: false, schema_version: 1})
        expect(doc.error.message).not.toContain('\n')
      })
    }
  })

  it('an unreachable origin exits 5 with a clear message', async () => {
    await fresh.setup()
    const result = await targon(['offers', '--json'], NOWHERE)
    expect(result.code).toBe(5)
    expect(parseJson(result).error).toMatchObject({code: 'NETWORK_ERROR', exit_code: 5})
  })

  it('a server that never answers exits 6 within the deadline', async () => {
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      // On the real clock: the deadline holds for the retries' waits too.
      await fresh.setup({clock: REAL_CLOCK})
      const started = Date.now()
      const result = await targon(['offers'], {
        env: {TARGON_API_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, TARGON_HTTP_TIMEOUT: '1'},
      })
      expect(result.code).toBe(6)
      expect(result.stderr).toMatch(/^Error: Targon API did not answer GET \/tha\/v3\/inventory within 1 s/)
      expect(Date.now() - started).toBeLessThan(30_000)
    } finally {
      silent.closeAllConnections()
      silent.close()
    }
  })

  it('an HTML error page from a proxy gives exit 5 and an excerpt, not a stack trace', async () => {
    await fresh.setup()
    fresh.sim.inject({
      body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
      contentType: 'text/html',
      path: '/tha/v3/inventory',
      status: 502,
    })
    const result = await targon(['offers'])
    expect(result.code).toBe(5)
    expect(result.stderr).toContain('502 Bad Gateway')
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
  })
})
