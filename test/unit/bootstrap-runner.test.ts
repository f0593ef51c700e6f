/**
 * The bootstrap runner's reading of what a VM prints: step lines however the output is chunked, the split between
 * the check and the shim phase of one call, and markers that are not markers. A VM's bytes are untrusted input.
 */
import {describe, expect, it} from 'vitest'

import {parseMarker} from '../../src/lib/adapters/bootstrap/marker.js'
import {SplitOutput, type StepEvent, StepParser} from '../../src/lib/adapters/bootstrap/steps.js'

function parse(chunks: string[]): StepEvent[] {
  const events: StepEvent[] = []
  const parser = new StepParser((event) => events.push(event))
  for (const chunk of chunks) parser.push(chunk)
  return events
}

describe('the bootstrap runner reads the VM', () => {
  it('takes step lines whole, wherever the chunks split them, with CRLF too', () => {
    const text = 'log line\r\nTARGON_STEP B4 apt start @1000\nTARGON_STEP B4 apt ok @3500 docker-ce nvidia-container-toolkit\r\n'
    const whole = parse([text])
    expect(whole).toEqual([
      {at: 1000, detail: '', event: 'start', id: 'B4'},
      {at: 3500, detail: 'docker-ce nvidia-container-toolkit', event: 'ok', id: 'B4'},
    ])
    // One character at a time gives the same events.
    expect(parse([...text])).toEqual(whole)
  })

  it('ignores what only looks like a step: mid-line, an unknown outcome, a time that is not a number', () => {
    expect(
      parse([
        'echo TARGON_STEP B1 x ok @1\n',
        'TARGON_STEP B1 x done @1\n',
        'TARGON_STEP B1 x ok @soon\n',
        'TARGON_STEP B1 x ok\n',
        'TARGON_STEPB1 x ok @1\n',
      ]),
    ).toEqual([])
  })

  it('keeps control characters in a detail for the display to make printable, and no line spills into another', () => {
    const events = parse(['TARGON_STEP B5 docker ok @7 28.2\u001b[2J\u0007\nTARGON_STEP B6 ctk skip @8 \u202eevil\n'])
    expect(events.map((event) => event.id)).toEqual(['B5', 'B6'])
    expect(events[0]?.detail).toBe('28.2\u001b[2J\u0007')
  })

  it('routes one call that ran the check and then the shim phase: each parser sees its own steps only', () => {
    const text = 'TARGON_STEP B0 marker ok @1 fast-path\nTARGON_MARKER {}\nTARGON_SHIM_FOLLOWS\nTARGON_STEP S1 shim skip @2 0.21.2\n'
    for (const size of [1, 3, 7, text.length]) {
      const check: StepEvent[] = []
      const shim: StepEvent[] = []
      const output = new SplitOutput(
        'TARGON_SHIM_FOLLOWS',
        new StepParser((event) => check.push(event)),
        new StepParser((event) => shim.push(event)),
      )
      for (let at = 0; at < text.length; at += size) output.push(text.slice(at, at + size))
      expect(check.map((event) => event.id)).toEqual(['B0'])
      expect(shim.map((event) => event.id)).toEqual(['S1'])
      expect(output.split).toBe(true)
      expect(output.before).toContain('TARGON_MARKER {}')
      expect(output.after).not.toContain('TARGON_SHIM_FOLLOWS')
    }
  })

  it('takes a marker that is not one as an empty marker, never as a crash', () => {
    expect(parseMarker('{"docker": {"version": "28.2.2"}, "gpus": {"count": 1}}')).toEqual({docker: {version: '28.2.2'}, gpus: {count: 1}})
    for (const hostile of ['', 'null', '[]', '{"docker": "yes"}', '{"gpus": {"count": "many"}}', '\u0000', '{'.repeat(10_000)])
      expect(parseMarker(hostile)).toEqual({})
  })
})
