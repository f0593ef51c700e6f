/**
 * Reading a run's event stream (--events ndjson, --events-file) in tests: every line must be one event that
 * validates against the published schema, and the stream must tell one run in causal order.
 */
import {expect} from 'vitest'
import * as z from 'zod'

import {PHASES, type PhaseName, type RunEvent, RunEventSchema} from '../../src/lib/adapters/events/schema.js'

/** Every line of `text` as a validated event; any other line fails the test. */
export function parseEvents(text: string): RunEvent[] {
  const lines = text.split('\n').filter((line) => line !== '')
  return lines.map((line) => {
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      throw new Error(`not an event line: ${line}\nin:\n${text}`)
    }

    const checked = RunEventSchema.strict().safeParse(parsed)
    if (!checked.success) throw new Error(`an event breaks the schema: ${z.prettifyError(checked.error)}\n${line}`)
    return checked.data
  })
}

/**
 * One run, from its start to its end, in causal order: times never go back; per VM, each phase starts before it
 * ends and ends at most once, the phases follow each other as the pipeline runs them, and every remote step falls
 * within its phase.
 */
export function expectOneRunInOrder(events: RunEvent[]): void {
  expect(events[0]).toMatchObject({status: 'started', type: 'run'})
  expect(events.at(-1)?.type).toBe('run')
  expect(new Set(events.map((event) => event.run)).size).toBe(1)
  for (let index = 1; index < events.length; index++)
    expect(Date.parse(events[index]?.time ?? '')).toBeGreaterThanOrEqual(Date.parse(events[index - 1]?.time ?? ''))

  const byVm = new Map<number, RunEvent[]>()
  for (const event of events) {
    const index = event.vm?.index
    if (index) byVm.set(index, [...(byVm.get(index) ?? []), event])
  }

  for (const vmEvents of byVm.values()) {
    const at = (phase: PhaseName, which: 'end' | 'start') =>
      vmEvents.findIndex(
        (event) =>
          event.type === 'phase' && event.phase === phase && (which === 'start' ? event.status === 'started' : event.status !== 'started'),
      )
    for (const phase of PHASES) {
      const ends = vmEvents.filter((event) => event.type === 'phase' && event.phase === phase && event.status !== 'started')
      expect(ends.length, `${phase} ends at most once`).toBeLessThanOrEqual(1)
      if (at(phase, 'start') >= 0) expect(at(phase, 'start')).toBeLessThan(at(phase, 'end'))
      for (const [position, event] of vmEvents.entries())
        if (event.type === 'step' && event.phase === phase) {
          expect(position).toBeGreaterThan(at(phase, 'start'))
          expect(position).toBeLessThan(at(phase, 'end'))
        }
    }

    // register, then deploy, then wait-running and install, then shim-start: each starts after the one before ended.
    const order: [PhaseName, PhaseName][] = [
      ['register', 'deploy'],
      ['deploy', 'wait-running'],
      ['deploy', 'install'],
      ['install', 'shim-start'],
    ]
    for (const [before, after] of order) {
      if (at(after, 'start') < 0) continue
      expect(at(before, 'end'), `${before} ended before ${after} started`).toBeGreaterThanOrEqual(0)
      expect(at(before, 'end'), `${before} ends before ${after} starts`).toBeLessThan(at(after, 'start'))
    }
  }
}
