/**
 * The progress display only listens: whatever the events say (a phase ended before its steps were shown, a VM
 * that never started, a failure), it ends when the run ends, and it never decides what runs.
 */
import {describe, expect, it} from 'vitest'

import {INSTALL_STEPS, SHIM_STEPS} from '../../src/lib/adapters/bootstrap/steps.js'
import type {PhaseName} from '../../src/lib/adapters/events/schema.js'
import {RunEvents} from '../../src/lib/adapters/events/run-events.js'
import {phaseProgress} from '../../src/lib/cli/progress.js'
import type {PipelineLayout} from '../../src/lib/workflows/up/pipeline.js'

const LAYOUT: PipelineLayout = {
  alongside: 'wait-running',
  concurrency: 3,
  count: 3,
  phases: [
    {name: 'register', substeps: undefined},
    {name: 'deploy', substeps: undefined},
    {name: 'wait-running', substeps: undefined},
    {name: 'install', substeps: INSTALL_STEPS},
    {name: 'shim-start', substeps: SHIM_STEPS},
  ],
}

describe('the progress display', () => {
  it('ends with the run: a fast path without step events, a failed VM, and a VM that never started', async () => {
    const display = await phaseProgress(LAYOUT)
    const events = new RunEvents('up')
    events.on(display.listener)
    const vm = (index: number) => ({index, name: `vm-${index}`, uid: `wrk-${index}`})
    const phase = (index: number, name: PhaseName, status: 'done' | 'failed' | 'skipped' | 'started') =>
      events.emit({
        error: status === 'failed' ? {code: 'API_ERROR', hint: null, message: 'boom'} : null,
        phase: name,
        status,
        type: 'phase',
        vm: vm(index),
      })

    // VM 1: adopted, bootstrapped already: phases skipped, install ends before any of its steps is reported.
    for (const name of ['register', 'deploy', 'wait-running'] as const) phase(1, name, 'skipped')
    events.emit({detail: 'fast-path', duration_ms: 3, phase: 'install', status: 'done', step: 'marker-check', type: 'step', vm: vm(1)})
    phase(1, 'install', 'done')
    phase(1, 'shim-start', 'done')
    // VM 2: fails in deploy.
    phase(2, 'register', 'done')
    phase(2, 'deploy', 'failed')
    // VM 3: its install started, then nothing more (an internal error before its end): its steps must not wait on.
    phase(3, 'register', 'done')
    phase(3, 'deploy', 'done')
    phase(3, 'wait-running', 'done')
    phase(3, 'install', 'started')
    let timer: NodeJS.Timeout | undefined
    const ended = await Promise.race([
      display.finish().then(() => 'ended'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('hung'), 5000))),
    ])
    clearTimeout(timer)
    expect(ended).toBe('ended')
  })
})
