/**
 * A command is built from the factory it is handed (src/lib/cli/factory.ts): in process, the fixture hands it the
 * simulator's clock, on which every wait is skipped. Were the clock not the factory's, these waits would take real
 * minutes and the test would time out.
 */
import {describe, expect, it} from 'vitest'

import {useFreshFixture} from '../helpers/fixture.js'

const ctx = useFreshFixture({inProcess: true})

describe('the factory a command is built from', () => {
  it('gives up the test clock: a boot of ten minutes is waited out in no real time, and the VM runs', async () => {
    await ctx.setup({bootDelayMs: 10 * 60_000})
    const up = await ctx.targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--timeout', '15m', '--json'])
    expect(up.code, up.stderr).toBe(0)
    expect(up.json.data.vms).toHaveLength(1)
    expect(ctx.sim.billing().map((workload) => workload.status)).toEqual(['running'])
    // The clock the run read is the simulator's: the VM was created at the simulator's time, ten minutes before now.
    const [workload] = ctx.sim.billing()
    expect(ctx.clock!.now() - Date.parse(workload!.created_at)).toBeGreaterThanOrEqual(10 * 60_000)
  })
})
