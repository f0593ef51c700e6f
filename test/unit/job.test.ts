/**
 * The pieces of a job that untrusted input reaches: ids, --out paths, --env assignments, the state a VM answers, and
 * the run script that real bash executes.
 */
import {execFileSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'

import {judgeJobs} from '../../src/lib/workflows/job/jobs-done.js'

import {TargonError} from '../../src/lib/core/errors.js'
import type {SshSession} from '../../src/lib/adapters/ssh/session.js'
import {startJob} from '../../src/lib/workflows/job/start.js'
import {
  JOBS_DIR,
  LISTED_RECORD_BYTES,
  checkJobId,
  checkOutPath,
  isJobId,
  listScript,
  newJobId,
  parseEnv,
  parseListing,
  parseState,
  commandScript,
  stateScript,
  workdirIdOf,
} from '../../src/lib/workflows/job/job.js'

describe('job ids', () => {
  it('are made from the clock and a random part, and only that form is accepted back', () => {
    const id = newJobId(Date.parse('2026-12-02T03:05:27.123Z'), Buffer.from([0xa1, 0xb2, 0xc3]))
    expect(id).toBe('j-20261202-030527-a1b2c3')
    expect(isJobId(id)).toBe(true)
    for (const bad of [
      '',
      'j-20261202-030527-a1b2c',
      '../j-20261202-030527-a1b2c3',
      'j-20261202-030527-a1b2c3\n',
      'j-20261202-030527-A1B2C3',
    ])
      expect(isJobId(bad), bad).toBe(false)
    expect(() => checkJobId('; rm -rf /')).toThrow(TargonError)
    expect(() => checkJobId('; rm -rf /')).toThrow(/no job/)
  })

  it('name one directory on the VM per local directory', () => {
    expect(workdirIdOf('/home/me/project')).toMatch(/^[0-9a-f]{16}$/)
    expect(workdirIdOf('/home/me/project')).toBe(workdirIdOf('/home/me/project'))
    expect(workdirIdOf('/home/me/project')).not.toBe(workdirIdOf('/home/me/other'))
  })
})

describe('--out paths', () => {
  it('stay inside the job directory, normalized', () => {
    expect(checkOutPath('results')).toBe('results')
    expect(checkOutPath('./results//model.pt')).toBe('results/model.pt')
    expect(checkOutPath('a/b/')).toBe('a/b')
    for (const bad of ['/etc/passwd', '..', 'a/../../b', 'a/..', '.', '', './', 'a\0b'])
      expect(() => checkOutPath(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({code: 'USAGE'}))
  })
})

describe('--env', () => {
  it('takes NAME=VALUE with a shell name; the value may hold anything but NUL', () => {
    expect(parseEnv('A=1')).toEqual({name: 'A', value: '1'})
    expect(parseEnv('_x=a=b c')).toEqual({name: '_x', value: 'a=b c'})
    expect(parseEnv('EMPTY=')).toEqual({name: 'EMPTY', value: ''})
    for (const bad of ['NOEQUALS', '=v', '1A=2', 'A-B=1', 'A B=1', '$(id)=1'])
      expect(() => parseEnv(bad), bad).toThrow(expect.objectContaining({code: 'USAGE'}))
  })
})

describe("a VM's answer about a job", () => {
  it('is one of the known forms, else unreadable', () => {
    expect(parseState('running\n')).toEqual({exit_code: null, state: 'running'})
    expect(parseState('exit 0')).toEqual({exit_code: 0, state: 'succeeded'})
    expect(parseState('exit 137')).toEqual({exit_code: 137, state: 'failed'})
    expect(parseState('cancelled')).toEqual({exit_code: null, state: 'cancelled'})
    expect(parseState('lost')).toEqual({exit_code: null, state: 'lost'})
    for (const bad of ['exit 256', 'exit -1', 'exit', 'exit 1; rm', 'RUNNING', '']) expect(parseState(bad), bad).toBeUndefined()
  })
})

describe('the run script', () => {
  it('exports the --env values exactly, runs the command as the remote shell reads it, and keeps its exit code', () => {
    const dir = mkdtempSync(join(tmpdir(), 'targon-job-'))
    const id = 'j-20261202-030527-a1b2c3'
    const script = commandScript(
      {command: `printf '%s|%s\\n' "$A" "$B" >${dir}/seen; exit 7`, down: false, id, out: [], started_at: '', workdir: dir},
      [
        {name: 'A', value: `it's "quoted" $(touch ${dir}/pwned) \`x\``},
        {name: 'B', value: 'line1\nline2'},
      ],
    )
    // The job directory of the script is on the VM: here, the exit code goes to a copy of the script pointed at dir.
    const local = script.replaceAll(`/home/ubuntu/.targon/jobs/${id}`, dir)
    writeFileSync(join(dir, 'run.sh'), local)
    let code = 0
    try {
      execFileSync('/bin/bash', [join(dir, 'run.sh')])
    } catch (error) {
      code = (error as {status: number}).status
    }
    expect(code).toBe(7)
    expect(readFileSync(join(dir, 'seen'), 'utf8')).toBe(`it's "quoted" $(touch ${dir}/pwned) \`x\`|line1\nline2\n`)
    expect(readFileSync(join(dir, 'exit_code'), 'utf8')).toBe('7\n')
    expect(() => readFileSync(join(dir, 'pwned'))).toThrow()
  })
})

describe('a start whose connection drops', () => {
  const record = {
    command: 'python train.py',
    down: false,
    id: 'j-20261202-030527-a1b2c3',
    out: [],
    started_at: '2026-12-02T03:05:27.000Z',
    workdir: '/home/ubuntu/targon/work/w',
  }
  const dropped = new TargonError('SSH_FAILED', 'connection lost')
  /** A session whose exec answers `answer`, or fails with it. */
  const sessionAnswering = (answer: Error | string) => {
    let closed = false
    const session = {
      close: () => (closed = true),
      exec: async () => {
        if (answer instanceof Error) throw answer
        return {code: 0, stderr: '', stdout: answer}
      },
    } as unknown as SshSession
    return {closed: () => closed, session}
  }

  /** How a start that must fail failed. */
  const failure = async (start: Promise<unknown>): Promise<TargonError> =>
    start.then(
      () => {
        throw new Error('the start did not fail')
      },
      (error: unknown) => error as TargonError,
    )

  it('names the job, which may run, when the VM cannot be asked again; keeps the error code', async () => {
    const unreachable = startJob(sessionAnswering(dropped).session, record, [], async () => Promise.reject(new Error('no route')), false)
    const error = await failure(unreachable)
    expect(error).toBeInstanceOf(TargonError)
    expect(error.code).toBe('SSH_FAILED')
    expect(error.message).toBe(`connection lost, while starting job ${record.id}`)
    expect(error.hint).toBe(`job ${record.id} may have started and run on: targon jobs lists it, targon jobs cancel ${record.id} stops it`)

    const mute = sessionAnswering(new TargonError('SSH_FAILED', 'lost again'))
    const unasked = await failure(startJob(sessionAnswering(dropped).session, record, [], async () => mute.session, false))
    expect([unasked.code, unasked.hint, mute.closed()]).toEqual(['SSH_FAILED', error.hint, true])
  })

  it('follows the job on the new connection when the VM shows it, and says it did not start when the VM has no trace of it', async () => {
    const running = sessionAnswering('running\n')
    expect((await startJob(sessionAnswering(dropped).session, record, [], async () => running.session, true)).session).toBe(running.session)
    const lost = sessionAnswering('lost\n')
    await expect(startJob(sessionAnswering(dropped).session, record, [], async () => lost.session, true)).rejects.toBe(dropped)
    expect(lost.closed()).toBe(true)
  })
})

describe("a job's state, read in real bash", () => {
  it('is its exit code when the job ends between the look for the exit code and the look at its unit, never lost', () => {
    const dir = mkdtempSync(join(tmpdir(), 'targon-state-'))
    const id = 'j-20261202-030000-a1b2c3'
    mkdirSync(join(dir, 'jobs', id), {recursive: true})
    mkdirSync(join(dir, 'bin'))
    // A unit that ends while systemctl is asked about it: its exit code is written, and it is no longer active.
    writeFileSync(join(dir, 'bin', 'systemctl'), `#!/bin/sh\necho 0 >'${join(dir, 'jobs', id, 'exit_code')}'\nexit 3\n`, {mode: 0o755})
    const state = (script: string) =>
      execFileSync('/bin/bash', ['-c', script.replaceAll(JOBS_DIR, join(dir, 'jobs'))], {
        env: {...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH}`},
      })
        .toString()
        .trim()
    expect(state(stateScript(id))).toBe('exit 0')
  })
})

describe('the listing of a VM with many jobs', () => {
  it('prints records newest first within its bound, the older jobs by id, state and --down alone, in real bash', () => {
    const dir = mkdtempSync(join(tmpdir(), 'targon-jobs-'))
    const ids = Array.from({length: 40}, (_, index) => `j-20261202-0300${String(index).padStart(2, '0')}-a1b2c3`)
    for (const [index, id] of ids.entries()) {
      mkdirSync(join(dir, id))
      const record = {
        command: 'x'.repeat(60_000),
        down: index % 2 === 0,
        id,
        out: [],
        started_at: '2026-12-02T03:00:00.000Z',
        workdir: '/w',
      }
      writeFileSync(join(dir, id, 'job.json'), JSON.stringify(record))
      writeFileSync(join(dir, id, 'exit_code'), '0\n')
    }
    const script = listScript().replaceAll(JOBS_DIR, dir)
    const output = execFileSync('/bin/bash', ['-c', script], {maxBuffer: 64 * 1024 * 1024}).toString()
    // Far less than the 40 records, which would take 3.2 MB in base64.
    expect(output.length).toBeLessThan((LISTED_RECORD_BYTES * 4) / 3 + 40 * 100)
    const listed = parseListing(output)
    expect(listed.problems).toEqual([])
    expect(listed.more).toBe(false)
    const withRecords = listed.jobs.map((job) => job.record.id)
    expect(withRecords).toEqual(ids.slice(-withRecords.length).reverse())
    // 2 MiB of records of about 60 KB each: the newest 34 or so.
    expect(withRecords.length).toBeGreaterThan(30)
    expect(withRecords.length).toBeLessThan(ids.length)
    expect(listed.leftOut).toEqual(
      ids
        .slice(0, ids.length - withRecords.length)
        .reverse()
        .map((id) => ({down: ids.indexOf(id) % 2 === 0, id, running: false})),
    )
    expect(listed.jobs.every((job) => job.state === 'succeeded')).toBe(true)
  })

  it('keeps a VM whose listing was cut short from --jobs-done, though every job it shows is an ended --down job', () => {
    const id = 'j-20261202-030000-a1b2c3'
    const record = {command: 'true', down: true, id, out: [], started_at: '2026-12-02T03:00:00.000Z', workdir: '/w'}
    const shown = `@@job ${id}\nexit 0\n1796187600\n${Buffer.from(JSON.stringify(record)).toString('base64')}\n`
    const whole = parseListing(shown)
    expect(judgeJobs(whole)).toEqual({done: [expect.objectContaining({record, state: 'succeeded'})]})
    expect(judgeJobs(parseListing(`${shown}@@left j-20261201-030000-a1b2c3\nsucceeded\n-\n@@more\n`))).toEqual({
      reason: 'more jobs than one listing reads; whether one still runs is not known',
      state: 'unreadable',
    })
  })

  it('reads a listing past the bound of ids: the VM is said to have more, and no name is trusted', () => {
    const listed = parseListing(
      '@@left j-20261202-030000-a1b2c3\nrunning\n-\n@@left ../etc\nlost\n-\n@@left j-20261202-030001-a1b2c3\nbogus\ndown\n@@more\n',
    )
    expect(listed).toEqual({
      jobs: [],
      leftOut: [{down: false, id: 'j-20261202-030000-a1b2c3', running: true}],
      more: true,
      problems: ['a job directory with a name no job has: "../etc"', 'job j-20261202-030001-a1b2c3: its state is unreadable'],
    })
  })
})
