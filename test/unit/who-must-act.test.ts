/** Every error code says who must act on it, the docs' exit-code table agrees, and a bug is told as one. */
import {readFileSync} from 'node:fs'
import {describe, expect, it} from 'vitest'

import {failureOf} from '../../src/lib/cli/base-command.js'
import {ERROR_CODES, TargonError, WHO_MUST_ACT, bugReport, usageError} from '../../src/lib/core/errors.js'
import {VERSION} from '../../src/lib/core/version.js'

describe('who must act', () => {
  it('is declared for every error code', () => {
    for (const [code, {whoMustAct}] of Object.entries(ERROR_CODES)) expect(WHO_MUST_ACT, code).toContain(whoMustAct)
  })

  it('is the same in the exit-code table of the scripting guide, which names every code', () => {
    const guide = readFileSync(new URL('../../docs/guides/scripting.md', import.meta.url), 'utf8')
    const table = guide.slice(guide.indexOf('## Exit codes'), guide.indexOf('## Environment'))
    const documented = new Map<string, string>()
    for (const row of table.split('\n').filter((line) => line.startsWith('| '))) {
      const [, codes = '', who = ''] = row.split(' | ')
      for (const [, code] of codes.matchAll(/`([A-Z_]+)`/g)) documented.set(code as string, who.replaceAll('`', ''))
    }

    expect(Object.fromEntries(documented)).toEqual(
      Object.fromEntries(Object.entries(ERROR_CODES).map(([code, {whoMustAct}]) => [code, whoMustAct])),
    )
  })
})

describe('the error a failed run reports', () => {
  it('tells an unexpected error as a bug of targon: its version, and a request for a report', () => {
    const failure = failureOf(new Error('boom'))
    expect(failure).toMatchObject({code: 'INTERNAL', exitCode: 1, whoMustAct: 'bug'})
    expect(failure.message).toBe(`unexpected error: boom: a bug of targon ${VERSION}; please report it with the command and this message`)
    expect(failure.hint).toBe('run again with --verbose to add the stack trace to the report')
  })

  it('names where to report when the package says', () => {
    const bug = bugReport(new TargonError('INTERNAL', 'a phase found the VM gone'), '9.9.9', 'https://example.org/issues')
    expect(bug.message).toBe(
      'a phase found the VM gone: a bug of targon 9.9.9; please report it at https://example.org/issues with the command and this message',
    )
  })

  it('leaves an error of the user or of Targon as it is', () => {
    const usage = usageError('--count must be at least 1', 'see --help')
    expect(failureOf(usage)).toMatchObject({code: 'USAGE', hint: 'see --help', message: '--count must be at least 1', whoMustAct: 'user'})
    const api = new TargonError('API_ERROR', 'the API answered 503', {httpStatus: 503})
    expect(failureOf(api)).toMatchObject({code: 'API_ERROR', message: 'the API answered 503', whoMustAct: 'targon'})
  })
})
