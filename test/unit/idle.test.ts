/**
 * The judgement of an idle clock read from a VM: idle only when the clock is there, fresh, consistent with the VM's
 * own time and idle, and a live sample finds nothing busy; everything else is busy or unreadable, never idle.
 */
import {describe, expect, it} from 'vitest'

import {type Probe, idlePastLimit, judgeIdle as judgeIdleAt} from '../../src/lib/domain/idle/idle.js'

const NOW = 1_800_000_000
/** Judged at NOW by this machine's clock too, under the configured limit `limitS` and the VM's own as known here. */
const judgeIdle = (probe: Probe, limitS: number | null, ownS: number | null = null) =>
  judgeIdleAt(probe, {fallbackS: limitS, ownS}, NOW * 1000)

function probe(
  changes: {clock?: Partial<NonNullable<Probe['clock']>> | null; live?: Partial<Probe['live']>; active?: boolean; now?: number} = {},
): Probe {
  const clock =
    changes.clock === null
      ? null
      : {
          busy: [],
          containers: null,
          gpus: [{index: 0, mem_total_mib: 97_887, mem_used_mib: 0, util_pct: 0}],
          interval_s: 60,
          last_active_at: NOW - 1000,
          limit_s: 600,
          sampled_at: NOW - 30,
          sessions: 0,
          tasks: [],
          threshold_pct: 10,
          tunnels: 0,
          version: '4',
          ...changes.clock,
        }
  return {
    clock,
    live: {
      busy: [],
      containers: null,
      gpus: [{index: 0, mem_total_mib: 97_887, mem_used_mib: 0, util_pct: 0}],
      sessions: [],
      tasks: [],
      ...changes.live,
    },
    now: changes.now ?? NOW,
    sampler_active: changes.active ?? true,
    version: '4',
  }
}

describe('the idle judgement', () => {
  it('never takes the word of a sampler too old to see the tasks of a current dstack shim', () => {
    for (const old of [{...probe(), version: '3'}, probe({clock: {version: '3'}}), probe({clock: {version: 'x'}})]) {
      const usage = judgeIdle(old, 60)
      expect(usage.state).toBe('unreadable')
      expect(usage.idle_reason).toContain('too old to see dstack tasks')
      expect(usage.idle_reason).toContain('targon up --name <vm> updates it')
      expect(idlePastLimit(usage)).toBe(false)
    }
    // What an old sampler does see busy stays busy.
    expect(judgeIdle({...probe({live: {busy: ['gpu 0 at 85 %']}}), version: '3'}, 60).state).toBe('busy')
    expect(idlePastLimit(judgeIdle(probe(), 60))).toBe(true)
  })

  it('is idle past its limit when the clock says so up to the last sample, by the VM clock alone', () => {
    const usage = judgeIdle(probe(), null)
    expect(usage).toMatchObject({idle_limit_seconds: 600, idle_seconds: 970, state: 'idle'})
    expect(idlePastLimit(usage)).toBe(true)
    // The same VM with its clock an hour ahead of ours: the same verdict, as only the VM's clock is used.
    const shifted = probe({clock: {last_active_at: NOW + 3600 - 1000, sampled_at: NOW + 3600 - 30}, now: NOW + 3600})
    expect(judgeIdle(shifted, null)).toEqual(usage)
  })

  it("takes the stricter of the VM's own limits over the configured one, and the configured one when it has none", () => {
    expect(judgeIdle(probe(), 5000).idle_limit_seconds).toBe(600)
    // Its sampler may tighten the limit set here, never loosen it.
    expect(judgeIdle(probe(), 5000, 300).idle_limit_seconds).toBe(300)
    expect(judgeIdle(probe(), null, 900).idle_limit_seconds).toBe(600)
    const noLimit = probe({clock: {limit_s: null}})
    expect(idlePastLimit(judgeIdle(noLimit, null))).toBe(false)
    expect(judgeIdle(noLimit, 900)).toMatchObject({idle_limit_seconds: 900, state: 'idle'})
    expect(idlePastLimit(judgeIdle(noLimit, 900))).toBe(true)
  })

  it('is busy when the live sample is busy, whatever the clock says, even when the clock is missing', () => {
    const busy = judgeIdle(probe({clock: null, live: {busy: ['ssh tunnel']}}), 60)
    expect(busy).toMatchObject({idle_seconds: 0, state: 'busy'})
    expect(busy.idle_reason).toContain('ssh tunnel')
    expect(judgeIdle(probe({clock: {busy: ['gpu 0 at 85 %']}}), 60).state).toBe('busy')
  })

  it('is unreadable, never idle, when the clock is missing, stopped, stale or ahead of the VM', () => {
    const cases: [Probe, string][] = [
      [probe({clock: null}), 'no idle clock'],
      [probe({active: false}), 'not running'],
      [probe({clock: {sampled_at: NOW - 60 * 3 - 31}}), 'stale'],
      [probe({clock: {sampled_at: NOW + 60}}), 'ahead'],
      [probe({clock: {last_active_at: NOW, sampled_at: NOW - 30}}), 'ahead'],
    ]
    for (const [read, why] of cases) {
      const usage = judgeIdle(read, 60)
      expect(usage.state, why).toBe('unreadable')
      expect(usage.idle_seconds).toBeNull()
      expect(usage.idle_reason).toContain(why)
      expect(idlePastLimit(usage)).toBe(false)
    }
  })

  it('counts sessions and tunnels apart, from the live sample', () => {
    const usage = judgeIdle(probe({live: {busy: ['ssh session', 'ssh tunnel'], sessions: [{kind: 'session'}, {kind: 'tunnel'}]}}), 60)
    expect(usage).toMatchObject({ssh_sessions: 1, state: 'busy', tunnels: 1})
  })

  it('takes a limit shorter than three samples as three samples: one quiet sample never ends a VM', () => {
    const usage = judgeIdle(probe({clock: {last_active_at: NOW - 30 - 150, limit_s: 60}}), null)
    expect(usage).toMatchObject({idle_limit_seconds: 180, idle_seconds: 150, state: 'idle'})
    expect(idlePastLimit(usage)).toBe(false)
  })
})

describe('a hold-off written on the VM (targon extend)', () => {
  it('keeps a VM idle past its limit while the hold-off runs by the VM clock, and lets it go once it ended', () => {
    const held = judgeIdle({...probe(), hold_until: NOW + 600}, null)
    expect(held).toMatchObject({idle_seconds: 970, state: 'idle'})
    expect(held.idle_reason).toContain('idle deletion held off on the VM for 600 s more (targon extend)')
    expect(idlePastLimit(held)).toBe(false)
    const ended = judgeIdle({...probe(), hold_until: NOW - 1}, null)
    expect(ended.idle_hold_until).toBeUndefined()
    expect(idlePastLimit(ended)).toBe(true)
    expect(idlePastLimit(judgeIdle({...probe(), hold_until: null}, null))).toBe(true)
  })
})
