/** The sweep's lock: a lock file left empty or unreadable by a crash does not make every later sweep skip for good. */
import {lutimesSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {ifFileLockFree} from '../../src/lib/adapters/state/lock.js'

const MIN = 60_000

/** Sets a path's own modification time `ms` into the past (file times are on the real clock). */
function ageBy(path: string, ms: number, link = false): void {
  const when = new Date(Date.now() - ms)
  if (link) lutimesSync(path, when, when)
  else utimesSync(path, when, when)
}

describe('ifFileLockFree', () => {
  it('skips while an unreadable lock file is fresh, and takes it over with a warning once it is minutes old', async () => {
    const lock = join(mkdtempSync(join(tmpdir(), 'targon-lock-')), 'sweep-default.lock')
    // A link that points nowhere: it exists, and it cannot be read.
    symlinkSync(join(lock, 'nowhere'), lock)
    const warnings: string[] = []
    expect(
      await ifFileLockFree(
        lock,
        async () => 'ran',
        (message) => warnings.push(message),
      ),
    ).toEqual({ran: false})
    expect(warnings).toEqual([])
    ageBy(lock, 6 * MIN, true)
    expect(
      await ifFileLockFree(
        lock,
        async () => 'ran',
        (message) => warnings.push(message),
      ),
    ).toEqual({ran: true, value: 'ran'})
    expect(warnings).toEqual([`the lock ${lock} could not be read for over 5 minutes: taken over`])
  })

  it('takes over an empty lock file left by a crash, and skips for a live holder', async () => {
    const lock = join(mkdtempSync(join(tmpdir(), 'targon-lock-')), 'sweep-default.lock')
    writeFileSync(lock, '')
    ageBy(lock, 6 * MIN)
    expect(await ifFileLockFree(lock, async () => 'ran')).toEqual({ran: true, value: 'ran'})
    writeFileSync(lock, JSON.stringify({pid: process.pid, started: null}))
    expect(await ifFileLockFree(lock, async () => 'ran')).toEqual({ran: false})
  })
})
