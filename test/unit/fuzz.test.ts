/** Property-based tests: whatever comes in, the result is a typed error or a valid value. */
import fc from 'fast-check'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {TargonClient} from '../../src/lib/adapters/targon/client.js'
import {TargonError} from '../../src/lib/core/errors.js'
import {fleetOf, workloadName} from '../../src/lib/domain/fleet/naming.js'
import {validateFleet} from '../../src/lib/adapters/settings/table.js'
import {DURATION_LIMITS, parseDuration, parsePrice} from '../../src/lib/core/input.js'
import {startSimulator} from '../helpers/simulator.js'
import {DEFAULT_TOKEN, type TargonSimulator} from '../simulator/simulator.js'

/** Random JSON, truncated JSON, and arbitrary text. */
const body = fc.oneof(
  fc.json(),
  fc.json().map((text) => text.slice(0, Math.max(0, Math.floor(text.length / 2)))),
  fc.string(),
  fc.constantFrom('{"items": null, "next_cursor": 5}', '{"uid": 7}', '[{"name": null}]', '{"status": {}}', 'null', '""'),
)

function isTypedOutcome(outcome: PromiseSettledResult<unknown>): boolean {
  return outcome.status === 'fulfilled' || outcome.reason instanceof TargonError
}

describe('client response parsing (fuzzed bodies over real HTTP)', () => {
  let sim: TargonSimulator
  let client: TargonClient
  beforeAll(async () => {
    sim = await startSimulator()
    client = new TargonClient({baseUrl: sim.url, maxAttempts: 1, token: DEFAULT_TOKEN})
  })
  afterAll(async () => {
    await client.close()
    await sim.stop()
  })

  const endpoints: [string, string | RegExp, () => Promise<unknown>][] = [
    ['inventory', '/tha/v3/inventory', () => client.inventory()],
    ['orgs', '/tha/v3/orgs', () => client.listOrgs()],
    ['ssh keys', /ssh-keys$/, () => client.listSshKeys('acme')],
    ['ssh key', '/ssh-keys/shk-1', () => client.getSshKey('acme', 'shk-1')],
    ['vm images', '/vm-images', () => client.listVmImages('acme')],
    ['workloads', /workloads$/, () => client.listWorkloads('acme')],
    ['workload', '/workloads/wrk-1', () => client.getWorkload('acme', 'wrk-1')],
    ['state', '/state', () => client.getWorkloadState('acme', 'wrk-1')],
    ['deploy', '/deploy', () => client.deployWorkload('acme', 'wrk-1')],
    ['version', '/tha/v3/version', () => client.version()],
  ]

  for (const [name, path, call] of endpoints) {
    it(`${name}: always a value or a TargonError`, async () => {
      await fc.assert(
        fc.asyncProperty(body, fc.constantFrom(200, 201, 400, 404, 500), async (text, status) => {
          sim.clearFaults()
          sim.inject({body: text, path, status, times: 1})
          const [outcome] = await Promise.allSettled([call()])
          return isTypedOutcome(outcome)
        }),
        {numRuns: 60},
      )
    })
  }
})

describe('validation of names, fleets and flag values', () => {
  const usage = (fn: () => unknown) => {
    try {
      return {value: fn()}
    } catch (error) {
      expect(error).toBeInstanceOf(TargonError)
      expect((error as TargonError).code).toBe('USAGE')
      expect((error as TargonError).message).not.toContain('\n')
      return {value: undefined}
    }
  }

  it('a label that would hide the VM from its fleet is refused', () => {
    expect(usage(() => workloadName('a', '-a')).value).toBeUndefined()
    expect(usage(() => workloadName('default', 'x-')).value).toBeUndefined()
    expect(workloadName('a', 'b--c')).toBe('tcli-a-b--c')
    expect(workloadName('default', 'tcli-default-x')).toBe('tcli-default-x')
    expect(fleetOf(workloadName('a', 'b--c'))).toBe('a')
  })

  it('workload names are valid Targon names of at most 32 characters, or a usage error', () => {
    fc.assert(
      fc.property(fc.string({maxLength: 16}), fc.option(fc.string({maxLength: 40}), {nil: undefined}), (fleet, label) => {
        const {value} = usage(() => workloadName(fleet, label))
        if (value !== undefined) {
          expect(value).toMatch(/^tcli-[a-z0-9]{1,12}-[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/)
          expect((value as string).length).toBeLessThanOrEqual(32)
          expect(fleetOf(value as string)).toBe(fleet)
        }
      }),
      {numRuns: 500},
    )
    fc.assert(fc.property(fc.stringMatching(/^[a-z0-9]{1,12}$/), (fleet) => validateFleet(fleet) === fleet))
  })

  it('--max-price is a positive finite number or a usage error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.double().map(String), fc.nat().map(String)), (input) => {
        const {value} = usage(() => parsePrice(input))
        if (value !== undefined) expect(Number.isFinite(value) && (value as number) > 0).toBe(true)
      }),
      {numRuns: 500},
    )
    fc.assert(fc.property(fc.integer({max: 100_000, min: 1}), (cents) => parsePrice((cents / 100).toFixed(2)) === cents / 100))
  })

  it('--ttl, --older-than and --timeout durations are positive and bounded, or a usage error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^(\d{1,4}(\.\d)?(ms|s|m|h|d)){1,3}$/)), (input) => {
        const {value} = usage(() => parseDuration(input, '--ttl'))
        if (value !== undefined)
          expect((value as number) >= DURATION_LIMITS['--ttl'].min && (value as number) <= DURATION_LIMITS['--ttl'].max).toBe(true)
      }),
      {numRuns: 500},
    )
    fc.assert(
      fc.property(
        fc.integer({max: 1000, min: 1}),
        fc.constantFrom('s', 'm', 'h'),
        (amount, unit) => parseDuration(`${amount}${unit}`, '--timeout') === amount * {h: 3_600_000, m: 60_000, s: 1000}[unit],
      ),
    )
  })
})
