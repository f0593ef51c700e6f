/** What exec, cp and extend print from their results, without running them. */
import {describe, expect, it} from 'vitest'

import {copyFailedLines, copyResultLine, copySkippedWarnings} from '../../src/lib/cli/render/cp.js'
import {execFailureLines} from '../../src/lib/cli/render/exec.js'
import {extendTable} from '../../src/lib/cli/render/extend.js'
import type {CopyVmResult} from '../../src/lib/workflows/copy/index.js'
import type {ExecResult} from '../../src/lib/workflows/exec/index.js'
import type {ExtendResult} from '../../src/lib/workflows/extend/index.js'

describe('exec', () => {
  const vm = (name: string, exit_code: number | null, error: string | null) => ({
    duration_ms: 10,
    error,
    exit_code,
    host_key: null,
    name,
    tail: [],
    uid: `wrk-${name}`,
  })

  it('names each VM where the command failed or did not run, with why, and escapes what the VM sent', () => {
    const result: ExecResult = {
      command: 'true',
      fleet: 'train',
      org: 'acme',
      results: [
        vm('a', 0, null),
        vm('b', 3, null),
        vm('c', 137, 'cut off'),
        vm('d', null, 'SSH refused'),
        vm('e', null, null),
        vm('f\u001b[2J', 1, null),
      ],
    }
    expect(execFailureLines(result)).toEqual([
      'b: exit code 3',
      'c: exit code 137 (cut off)',
      'd: SSH refused',
      'e: did not run',
      'f\\x1b[2J: exit code 1',
    ])
  })
})

describe('cp', () => {
  const copied = (extra: Partial<CopyVmResult> = {}): CopyVmResult => ({
    bytes: 3 * 1024 * 1024,
    copied: ['out/a', 'out/b'],
    destination: '/home/ubuntu/out',
    direction: 'upload',
    duration_ms: 1234,
    error: null,
    failed: [],
    files: 2,
    host_key: null,
    ok: true,
    planned_files: 2,
    skipped: [],
    source: './out',
    uid: 'wrk-a',
    vm: 'worker1',
    ...extra,
  })

  it('says what was copied where, or that the VM failed and why', () => {
    expect(copyResultLine(copied())).toBe('worker1: uploaded 2 of 2 files (3.0 MiB) in 1.2 s to /home/ubuntu/out')
    expect(copyResultLine(copied({direction: 'download', destination: 'out/worker1'}))).toBe(
      'worker1: downloaded 2 of 2 files (3.0 MiB) in 1.2 s to out/worker1',
    )
    expect(copyResultLine(copied({error: '1 file failed', files: 1, ok: false}))).toBe(
      'worker1: FAILED, 1 of 2 files (3.0 MiB) in 1.2 s: 1 file failed',
    )
  })

  it('puts each file not copied and each entry skipped on a line of its own, escaped', () => {
    const result = copied({
      failed: [{error: 'Permission denied', path: 'out/b\nforged line'}],
      skipped: [{path: 'out/link', reason: 'a symbolic link'}],
    })
    expect(copyFailedLines(result)).toEqual(['worker1 | not copied: out/b\\nforged line: Permission denied'])
    expect(copySkippedWarnings(result)).toEqual(['worker1: skipped out/link: a symbolic link'])
  })
})

describe('extend', () => {
  it('shows each VM with its new limits, a dash where it has none', () => {
    const result: ExtendResult = {
      org: 'acme',
      vms: [
        {
          budget_ends_at: null,
          idle_hold_on_vm: null,
          idle_hold_until: null,
          limits_on_vm: 'written',
          max_cost_usd: 12.5,
          name: 'worker1',
          ttl_expires_at: '2026-12-07T19:30:00.000Z',
          uid: 'wrk-a',
        },
        {
          budget_ends_at: '2026-12-08T01:00:00.000Z',
          idle_hold_on_vm: 'written',
          idle_hold_until: '2026-12-07T20:00:00.000Z',
          limits_on_vm: null,
          max_cost_usd: null,
          name: null,
          ttl_expires_at: null,
          uid: 'wrk-b',
        },
      ],
    }
    expect(extendTable(result).split('\n')).toEqual([
      'NAME\tTTL\tIDLE_HELD_UNTIL\tBUDGET\tBUDGET_ENDS',
      'worker1\t2026-12-07T19:30\t-\t12.5 USD\t-',
      '-\t-\t2026-12-07T20:00\t-\t2026-12-08T01:00',
    ])
  })
})
